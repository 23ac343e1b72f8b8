"""keras_bert_lab: build, pretrain, fine-tune and study the BERT family in Keras 3.

Model code is backend-agnostic (TensorFlow, JAX, PyTorch via ``KERAS_BACKEND``); TensorFlow is
imported only by the text side (``preprocessing``, ``pipelines``) and the checkpoint converters,
when they are used. The models and tasks are exported here; text comes in through
``keras_bert_lab.preprocessing`` (e.g. ``BertTextPreprocessor.from_preset(...)``).
"""

from keras_bert_lab.models.awd_lstm import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm_config import AwdLstmConfig
from keras_bert_lab.models.bert import BertBackbone
from keras_bert_lab.models.bert_config import BertConfig
from keras_bert_lab.models.elmo import ElmoBiLM
from keras_bert_lab.models.elmo_config import ElmoConfig
from keras_bert_lab.models.gpt import GPTBackbone
from keras_bert_lab.models.gpt_config import GPTConfig
from keras_bert_lab.tasks.awd_lm import AwdLstmLanguageModel
from keras_bert_lab.tasks.causal_lm import GPTCausalLM
from keras_bert_lab.tasks.classifier import BertClassifier
from keras_bert_lab.tasks.elmo_lm import ElmoLanguageModel
from keras_bert_lab.tasks.feature_tagger import FeatureTagger
from keras_bert_lab.tasks.gpt_classifier import (GPTClassifier, GPTMultipleChoice, GPTSpanQA,
                                                 GPTTokenClassifier)
from keras_bert_lab.tasks.multiple_choice import BertMultipleChoice
from keras_bert_lab.tasks.pretraining import BertPretrainer
from keras_bert_lab.tasks.question_answering import BertSpanQA
from keras_bert_lab.tasks.sentence_embedding import SentenceEmbedder
from keras_bert_lab.tasks.token_classification import BertTokenClassifier
from keras_bert_lab.tasks.ulmfit_classifier import UlmfitClassifier
from keras_bert_lab.version import __version__

__all__ = ["AwdLstmBackbone", "AwdLstmConfig", "AwdLstmLanguageModel", "UlmfitClassifier",
           "BertBackbone", "BertClassifier", "BertConfig", "BertMultipleChoice", "BertPretrainer",
           "BertSpanQA", "BertTokenClassifier", "ElmoBiLM", "ElmoConfig", "ElmoLanguageModel",
           "FeatureTagger", "GPTBackbone", "GPTCausalLM", "GPTClassifier", "GPTConfig",
           "GPTMultipleChoice", "GPTSpanQA", "GPTTokenClassifier", "SentenceEmbedder",
           "__version__"]
