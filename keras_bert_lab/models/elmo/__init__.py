"""The ELMo family (Peters et al. 2018): the character-based biLM, its LM task, features, weights.

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``config``                :class:`ElmoConfig`, the released sizes, ``options.json``
``char_cnn``              its own layers: the character CNN and the highway layers
``backbone``              :class:`ElmoBackbone`: token encoder + forward and backward LSTM stacks
``language_model``        :class:`ElmoLanguageModel`: both directions' softmax (full or sampled)
``word_features``         :class:`ElmoWordFeatures`: every layer per word (the feature-based use)
``pretrain``              the recipe behind ``kbl pretrain --model elmo``
``convert``               the original ``options.json`` + ``lm_weights.hdf5``, both ways
========================  ==================================================================
"""

from keras_bert_lab.families import lazy_exports
from keras_bert_lab.models.elmo.backbone import ElmoBackbone
from keras_bert_lab.models.elmo.config import ElmoConfig
from keras_bert_lab.models.elmo.language_model import ElmoLanguageModel

__getattr__ = lazy_exports(__name__, {"ElmoWordFeatures": "word_features"})
__all__ = ["ElmoBackbone", "ElmoConfig", "ElmoLanguageModel", "ElmoWordFeatures"]
