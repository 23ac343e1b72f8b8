"""keras_bert_lab: build, pretrain, fine-tune and study the BERT family in Keras 3.

Model code is backend-agnostic (TensorFlow, JAX, PyTorch via ``KERAS_BACKEND``); TensorFlow is
imported only by the text pipeline and the converters, on first use.
"""

from keras_bert_lab.models.bert import BertBackbone
from keras_bert_lab.models.config import BertConfig
from keras_bert_lab.tasks.classifier import BertClassifier
from keras_bert_lab.tasks.multiple_choice import BertMultipleChoice
from keras_bert_lab.tasks.pretraining import BertPretrainer
from keras_bert_lab.tasks.question_answering import BertSpanQA
from keras_bert_lab.tasks.sentence_embedding import SentenceEmbedder
from keras_bert_lab.tasks.token_classification import BertTokenClassifier

__version__ = "0.1.0"
__all__ = ["BertBackbone", "BertClassifier", "BertConfig", "BertMultipleChoice", "BertPretrainer",
           "BertSpanQA", "BertTokenClassifier", "SentenceEmbedder"]
