"""keras_bert_lab: build, pretrain, fine-tune and study the BERT family in Keras 3.

Model code is backend-agnostic (TensorFlow, JAX, PyTorch via ``KERAS_BACKEND``); TensorFlow is
imported only by the text side (preprocessors, pipelines) and the checkpoint converters, when
they are used. Each model family lives in its own folder, ``keras_bert_lab.models.<family>``,
declared once in :mod:`keras_bert_lab.families`; their models and tasks are exported here, with
``Backbone`` and ``Task``, whose ``from_preset`` loads whatever family a preset holds. Text comes
in through each family's preprocessors (e.g. ``BertTextPreprocessor.from_preset(...)``).
"""

from keras_bert_lab.models.awd_lstm import (AwdLstmBackbone, AwdLstmConfig, AwdLstmLanguageModel,
                                            UlmfitClassifier)
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.bert import (BertBackbone, BertClassifier, BertConfig,
                                        BertMultipleChoice, BertPretrainer, BertSpanQA,
                                        BertTokenClassifier, SentenceEmbedder)
from keras_bert_lab.models.electra import (ElectraBackbone, ElectraClassifier, ElectraConfig,
                                           ElectraDiscriminator, ElectraMaskedLM,
                                           ElectraMultipleChoice, ElectraPretrainer,
                                           ElectraSpanQA, ElectraTokenClassifier)
from keras_bert_lab.models.elmo import ElmoBackbone, ElmoConfig, ElmoLanguageModel
from keras_bert_lab.models.gpt import (GPTBackbone, GPTCausalLM, GPTClassifier, GPTConfig,
                                       GPTMultipleChoice, GPTSpanQA, GPTTokenClassifier)
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.feature_tagger import FeatureTagger
from keras_bert_lab.version import __version__

__all__ = ["AwdLstmBackbone", "AwdLstmConfig", "AwdLstmLanguageModel", "Backbone",
           "BertBackbone", "BertClassifier", "BertConfig", "BertMultipleChoice", "BertPretrainer",
           "BertSpanQA", "BertTokenClassifier", "ElectraBackbone", "ElectraClassifier",
           "ElectraConfig", "ElectraDiscriminator", "ElectraMaskedLM", "ElectraMultipleChoice",
           "ElectraPretrainer", "ElectraSpanQA", "ElectraTokenClassifier", "ElmoBackbone",
           "ElmoConfig", "ElmoLanguageModel",
           "FeatureTagger", "GPTBackbone", "GPTCausalLM", "GPTClassifier", "GPTConfig",
           "GPTMultipleChoice", "GPTSpanQA", "GPTTokenClassifier", "SentenceEmbedder", "Task",
           "UlmfitClassifier", "__version__"]
