"""The AWD-LSTM family (Merity et al. 2017) and ULMFiT's classifier on it (Howard & Ruder 2018).

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``config``                :class:`AwdLstmConfig`, the sizes and the published dropout sets
``layers``                its own layers: embedding/locked dropout, carried state, tied decoder,
                          concat pooling
``backbone``              :class:`AwdLstmBackbone`: the weight-dropped LSTM stack
``language_model``        :class:`AwdLstmLanguageModel`: the tied decoder, AR/TAR, stateful BPTT
``ulmfit_classifier``     :class:`UlmfitClassifier`: concat pooling under two linear blocks
``pretrain``              the recipe behind ``kbl pretrain --model awd-lstm`` (ULMFiT stages 1, 2)
``finetune``              the ``kbl finetune classify`` adapter (ULMFiT stage 3)
========================  ==================================================================
"""

from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.models.awd_lstm.language_model import AwdLstmLanguageModel
from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier

__all__ = ["AwdLstmBackbone", "AwdLstmConfig", "AwdLstmLanguageModel", "UlmfitClassifier"]
