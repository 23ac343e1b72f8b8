"""The GPT family (Radford et al. 2018): the left-to-right decoder, its heads, text and weights.

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``config``                :class:`GPTConfig` and the named sizes (tiny … base)
``backbone``              :class:`GPTBackbone`: token + position embedding, causal blocks
``causal_lm``             :class:`GPTCausalLM`: the tied LM head, its loss, text generation
``heads``                 what the fine-tuning heads share: the extract state, the auxiliary LM
``classifier``            :class:`GPTClassifier`: classification, entailment, similarity
``multiple_choice``       :class:`GPTMultipleChoice`
``token_classifier``      :class:`GPTTokenClassifier` (tagging, each word on its last piece)
``span_qa``               :class:`GPTSpanQA` (extractive QA on ``[start] q [delim] c [extract]``)
``preprocessor``          GPT-1's task input transformations (:class:`GPTTaskPacker`), tagging and
                          span-QA rows
``layout``                the model-parallel split of the blocks (Megatron-style)
``pretrain``              the recipe behind ``kbl pretrain --model gpt``
``finetune``              the ``kbl finetune`` adapters
``convert``               transformers' ``OpenAIGPT*`` both ways, OpenAI's original release in
========================  ==================================================================

The model side is exported here; the text side (``GPTTaskPacker``, ``GPTTaggingPreprocessor``,
``GPTSpanQAPreprocessor``) is imported when first asked for (it loads TensorFlow).
"""

from keras_bert_lab.families import lazy_exports
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from keras_bert_lab.models.gpt.classifier import GPTClassifier
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.models.gpt.multiple_choice import GPTMultipleChoice
from keras_bert_lab.models.gpt.span_qa import GPTSpanQA
from keras_bert_lab.models.gpt.token_classifier import GPTTokenClassifier

__getattr__ = lazy_exports(__name__, {"GPTTaskPacker": "preprocessor",
                                      "GPTTaggingPreprocessor": "preprocessor",
                                      "GPTSpanQAPreprocessor": "preprocessor"})
__all__ = ["GPTBackbone", "GPTCausalLM", "GPTClassifier", "GPTConfig", "GPTMultipleChoice",
           "GPTSpanQA", "GPTTokenClassifier", "GPTTaskPacker", "GPTTaggingPreprocessor",
           "GPTSpanQAPreprocessor"]
