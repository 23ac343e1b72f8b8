"""Backbones and their configs: the encoders every task is built on (BERT now; GPT, the ELMo
biLM, AWD-LSTM and skip-gram beside it as they land), each ``Backbone`` subclass with its own
config dataclass."""
