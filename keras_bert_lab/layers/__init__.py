"""Building blocks written with ``keras.ops`` only (no backend import): embeddings, attention,
the encoder block, pretraining heads, pooling — shared by every model of the lab."""
