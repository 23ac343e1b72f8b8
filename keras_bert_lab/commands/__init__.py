"""The ``kbl`` sub-commands, one module each with ``register(subparsers)``; :mod:`keras_bert_lab.cli`
puts them together.

A command reads its flags, asks the family registry (:mod:`keras_bert_lab.families`) what the
chosen preset's family does for it, and calls library code; nothing imports a command but the
command line (and the tests of its flags).
"""
