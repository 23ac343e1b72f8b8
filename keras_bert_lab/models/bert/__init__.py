"""The BERT family (Devlin et al. 2019): one folder for the encoder, its tasks, text and weights.

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``config``                :class:`BertConfig`, the named sizes (tiny … large), the modern options
``backbone``              :class:`BertBackbone`: embeddings, post-LN (or pre-LN) blocks, pooler
``pretrainer``            :class:`BertPretrainer`: masked LM (tied decoder) + next sentence
``classifier``            :class:`BertClassifier`: sentence / pair classification, regression
``multiple_choice``       :class:`BertMultipleChoice` (SWAG)
``token_classifier``      :class:`BertTokenClassifier` (NER)
``span_qa``               :class:`BertSpanQA` (SQuAD)
``sentence_embedder``     :class:`SentenceEmbedder` (mean pooling, Sentence-BERT / MiniLM)
``preprocessor``          :class:`BertTextPreprocessor`: texts → ``[CLS] A [SEP] (B [SEP])``
``word_features``         :class:`BertWordFeatures`: every layer per word (feature-based study)
``layout``                the model-parallel split of the blocks (Megatron-style)
``pretrain``              the pretraining recipe behind ``kbl pretrain --model bert``
``finetune``              the ``kbl finetune`` adapters (texts → this family's task inputs)
``convert_hf``            Hugging Face ``BertModel`` / ``BertFor*`` directories, both ways
``hf_weights``            the tensor table between HF's names and ours (NumPy only)
``convert_google``        google-research/bert TF1 checkpoints, in
``convert_keras_hub``     keras-hub ``BertBackbone`` presets, both ways
``convert_modernbert``    HF ``ModernBert*`` weights and a ``BertBackbone`` with the modern options
========================  ==================================================================

The model side (config, backbone, tasks) is exported here; the text side loads TensorFlow, so
its names (``BertTextPreprocessor``, ``BertWordFeatures``) are imported when first asked for.
The family's registry entry is in :mod:`keras_bert_lab.families`.
"""

from keras_bert_lab.families import lazy_exports
from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.classifier import BertClassifier
from keras_bert_lab.models.bert.config import BertConfig
from keras_bert_lab.models.bert.multiple_choice import BertMultipleChoice
from keras_bert_lab.models.bert.pretrainer import BertPretrainer
from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder
from keras_bert_lab.models.bert.span_qa import BertSpanQA
from keras_bert_lab.models.bert.token_classifier import BertTokenClassifier

__getattr__ = lazy_exports(__name__, {"BertTextPreprocessor": "preprocessor",
                                      "BertWordFeatures": "word_features"})
__all__ = ["BertBackbone", "BertClassifier", "BertConfig", "BertMultipleChoice",
           "BertPretrainer", "BertSpanQA", "BertTokenClassifier", "SentenceEmbedder",
           "BertTextPreprocessor", "BertWordFeatures"]
