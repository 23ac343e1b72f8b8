"""The ELECTRA family (Clark et al. 2020): replaced-token detection, one folder.

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``config``                :class:`ElectraConfig`: the paper's sizes, embedding width, the
                          generator's size (:meth:`ElectraConfig.generator`)
``backbone``              :class:`ElectraBackbone`: embeddings (width ``E``), projection,
                          post-LN blocks; a discriminator or a generator
``heads``                 the replaced-token head; the layer that samples the generator's tokens
``pretrainer``            :class:`ElectraPretrainer`: generator + discriminator, ``L_MLM + 50·L_D``
``discriminator``         :class:`ElectraDiscriminator`: replaced-token logits for every token
``masked_lm``             :class:`ElectraMaskedLM`: a generator alone (``kbl fill-mask``)
``classifier``,           the fine-tuning heads BERT-style encoders share (:mod:`keras_bert_lab
``token_classifier``,     .tasks`), on the discriminator: :class:`ElectraClassifier`,
``span_qa``,              :class:`ElectraTokenClassifier`, :class:`ElectraSpanQA`,
``multiple_choice``       :class:`ElectraMultipleChoice` (``kbl finetune``)
``pretrain``              ``kbl pretrain --model electra`` (text side: loads TensorFlow)
``convert_hf``            Hugging Face ``ElectraModel`` / ``ElectraForPreTraining`` /
                          ``ElectraForMaskedLM`` directories, both ways
========================  ==================================================================

ELECTRA fine-tunes as BERT does (Clark et al. 2020, §3.1): the discriminator with BERT's head on
top; the generator is thrown away after pretraining. The pooler (for ``pooling="cls"``) was never
trained by replaced-token detection and starts from its initialisation, as in the released code;
the recipe's presets therefore advise mean pooling, as BERT's MLM-only ones do.

ELECTRA reads text as BERT does (WordPiece, ``[CLS] A [SEP] B [SEP]``). The family's registry
entry is in :mod:`keras_bert_lab.families`.
"""

from keras_bert_lab.models.electra.backbone import ElectraBackbone
from keras_bert_lab.models.electra.classifier import ElectraClassifier
from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.discriminator import ElectraDiscriminator
from keras_bert_lab.models.electra.masked_lm import ElectraMaskedLM
from keras_bert_lab.models.electra.multiple_choice import ElectraMultipleChoice
from keras_bert_lab.models.electra.pretrainer import ElectraPretrainer
from keras_bert_lab.models.electra.span_qa import ElectraSpanQA
from keras_bert_lab.models.electra.token_classifier import ElectraTokenClassifier

__all__ = ["ElectraBackbone", "ElectraClassifier", "ElectraConfig", "ElectraDiscriminator",
           "ElectraMaskedLM", "ElectraMultipleChoice", "ElectraPretrainer", "ElectraSpanQA",
           "ElectraTokenClassifier"]
