"""The family registry: every model family of the lab, declared once, and the one place that
dispatches on it.

A *family* is one folder, ``keras_bert_lab/models/<name>/``, holding everything of one model
line: its config and backbone, the layers only it uses, its tasks, its preprocessors, its
pretraining recipe, its converters and its ``kbl finetune`` adapters. What the rest of the code
needs to know about a family is its :class:`Family` entry below — names of things inside the
folder, written as ``"module:Name"`` and imported only when asked for — so shared code (a
command, a preprocessor's ``from_preset``, the layout maps, the export) asks the registry instead
of comparing class names or strings:

>>> family_of("bert").title
'BERT (Devlin et al. 2019) and its encoders: MiniLM, the modern options'
>>> family_of("awd-lstm").name            # a `kbl pretrain --model` spelling works too
'awd_lstm'
>>> family_of("gpt").task("generate").__name__
'GPTCausalLM'
>>> from keras_bert_lab.models.bert.config import BertConfig
>>> family_of(BertConfig.from_size("tiny")).name
'bert'
>>> [f.name for f in FAMILIES if f.has_task("squad")]
['bert', 'gpt', 'electra']

A preset records its family (``config.json`` ``"family"``); presets written before the registry
name only their backbone class, which :func:`for_backbone` maps back (``Preset.family``).
Adding a family: README's "Adding a model family" checklist — the folder, one entry here, the
parity test, the task contract test.

This module imports nothing of the package but its errors, so every floor may ask it.

Long module: the registry is one table of every family and the lookups over it, the one place
that may dispatch on a family; split, the table would sit apart from the code that reads it.
"""

import dataclasses
import importlib

from keras_bert_lab.errors import ConfigError, PresetError

PACKAGE = "keras_bert_lab.models"


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family: what lives in its folder ``keras_bert_lab/models/<name>/``.

    References are ``"module:Name"`` inside the folder (``"keras_bert_lab.x:Name"`` for a shared
    class, such as a tokenizer), resolved on first use, so declaring a family imports nothing.

    Attributes:
        name: the folder's name, and what a preset records as its ``family``.
        label: how messages name it (``"BERT"``); title: one line for listings.
        backbone, config: the backbone (the model presets hold) and its config class.
        tokenizer: the tokenizer class its presets' ``vocab.txt`` is read with.
        tasks: task kind → class. Kinds the commands ask for: ``pretrain``, ``classify``,
            ``choice``, ``ner``, ``squad``, ``embed``, ``generate``, ``fill_mask``; a family may
            list others of its own (ELECTRA's ``detect``).
        preprocessors: task kind → the preprocessor class its texts go through for that task.
        finetune: module of its ``kbl finetune`` adapters (``classify``, ``choice``, ``ner``,
            ``squad``, each optional, and ``FLAGS``: the task flags only it takes); the
            BERT-style encoders share :mod:`keras_bert_lab.commands.finetune.encoder`.
        recipe: module of its pretraining recipe (``SETTINGS``, the settings class, and
            ``run(settings, output_dir, ...)``); ``cli_name`` is its ``kbl pretrain --model``.
        converters: checkpoint format → the function that writes a preset from it (what builds
            a named preset of that format); exporters: format → the function that writes a
            model or preset in it (``kbl preset export-*``).
        hf_model_types: the ``model_type`` values of the Hugging Face ``config.json`` files its
            ``huggingface`` converter reads (``kbl preset import-hf`` picks the family by it).
        layout: the function giving a config's model-parallel layout rules (``None``: the family
            trains data-parallel only).
        features: the per-word feature extractor (``kbl features``, the feature-based taggers).
        exports: how its presets serve raw text without Python code: the formats ``kbl export``
            writes for its classifiers (``saved_model``, ``onnx``) and the commands that read
            them (``predict``, ``embed``, ``fill-mask``).
        distribution: how ``kbl pretrain`` / ``kbl finetune`` may spread it over devices.
        legacy_backbones: backbone class names older presets of this family hold.
    """

    name: str
    label: str
    title: str
    backbone: str
    config: str | None = None
    tokenizer: str | None = None
    tasks: dict = dataclasses.field(default_factory=dict)
    preprocessors: dict = dataclasses.field(default_factory=dict)
    finetune: str | None = None
    recipe: str | None = None
    cli_name: str | None = None
    converters: dict = dataclasses.field(default_factory=dict)
    exporters: dict = dataclasses.field(default_factory=dict)
    hf_model_types: tuple = ()
    layout: str | None = None
    features: str | None = None
    exports: tuple = ()
    distribution: tuple = ()
    legacy_backbones: tuple = ()

    @property
    def package(self):
        """The family's folder as a package name (``keras_bert_lab.models.bert``)."""
        return f"{PACKAGE}.{self.name}"

    def module(self, name):
        """A module of the family's folder, imported (``family.module("finetune")``)."""
        return importlib.import_module(name if name.startswith("keras_bert_lab.")
                                       else f"{self.package}.{name}")

    def resolve(self, reference):
        """The object a ``"module:Name"`` reference names, imported."""
        module, _, attribute = reference.partition(":")
        return getattr(self.module(module), attribute)

    @property
    def backbone_class(self):
        return self.resolve(self.backbone)

    @property
    def config_class(self):
        if self.config is None:
            raise ConfigError(f"The {self.name} family has no config class.")
        return self.resolve(self.config)

    @property
    def tokenizer_class(self):
        if self.tokenizer is None:
            raise ConfigError(f"The {self.name} family reads no text through a tokenizer.")
        return self.resolve(self.tokenizer)

    @property
    def backbone_names(self):
        """The backbone class names a preset of this family may hold."""
        return (self.backbone.rpartition(":")[2], *self.legacy_backbones)

    def has_task(self, kind):
        return kind in self.tasks

    def task(self, kind, purpose=None):
        """The task class of ``kind``; ``ConfigError`` naming the families that have one."""
        if kind not in self.tasks:
            others = [f.name for f in FAMILIES if kind in f.tasks]
            raise ConfigError(f"The {self.name} family has no {kind!r} task"
                              f"{' (' + purpose + ')' if purpose else ''}; families that have "
                              f"one: {', '.join(others) or 'none'}.")
        return self.resolve(self.tasks[kind])

    def task_classes(self):
        """Every task class of the family, by class name."""
        return {ref.rpartition(":")[2]: ref for ref in self.tasks.values()}

    def task_named(self, class_name):
        """The family's task class called ``class_name`` (a preset's ``task.class_name``)."""
        refs = self.task_classes()
        if class_name not in refs:
            raise PresetError(f"The {self.name} family has no task class {class_name!r}; its "
                              f"tasks are {', '.join(sorted(refs))}.")
        return self.resolve(refs[class_name])

    def preprocessor(self, kind):
        """The preprocessor class of task ``kind``."""
        if kind not in self.preprocessors:
            others = [f.name for f in FAMILIES if kind in f.preprocessors]
            raise ConfigError(f"The {self.name} family has no {kind!r} preprocessor; families "
                              f"that have one: {', '.join(others) or 'none'}.")
        return self.resolve(self.preprocessors[kind])

    def finetune_adapter(self, kind, command=None):
        """The ``kbl finetune`` adapter function of ``kind`` (``classify``, ``choice``, ``ner``,
        ``squad``) from the family's ``finetune`` module; ``ConfigError`` when it has none."""
        adapter = getattr(self.module(self.finetune), kind, None) if self.finetune else None
        if adapter is None:
            others = [f.name for f in FAMILIES
                      if f.finetune and getattr(f.module(f.finetune), kind, None)]
            raise ConfigError(f"`kbl finetune {command or kind}` has no recipe for {self.name} "
                              f"presets; it fine-tunes {', '.join(others)} presets.")
        return adapter

    def finetune_flags(self):
        """The task flags only this family takes (its adapters' ``FLAGS``)."""
        return tuple(getattr(self.module(self.finetune), "FLAGS", ())) if self.finetune else ()

    def recipe_module(self):
        if self.recipe is None:
            raise ConfigError(f"The {self.name} family has no pretraining recipe.")
        return self.module(self.recipe)

    def converter(self, format):
        if format not in self.converters:
            raise PresetError(f"The {self.name} family reads no {format!r} checkpoints; its "
                              f"formats: {', '.join(self.converters) or 'none'}.")
        return self.resolve(self.converters[format])

    def exporter(self, format):
        if format not in self.exporters:
            writers = [f.name for f in FAMILIES if format in f.exporters]
            raise PresetError(f"The {self.name} family writes no {format!r} checkpoints; "
                              f"families that do: {', '.join(writers) or 'none'}.")
        return self.resolve(self.exporters[format])

    def layout_rules(self, config):
        """``[(path regex, axes)]`` of the family's model-parallel split of ``config``."""
        if self.layout is None:
            raise ConfigError(
                f"No layout map for a {self.name} backbone ({type(config).__name__}): model "
                "parallelism covers the families "
                f"{', '.join(f.name for f in FAMILIES if f.layout)}. Train this model "
                "data-parallel (distribution_for('data'), --data-parallel).")
        return self.resolve(self.layout)(config)

    def feature_extractor(self):
        if self.features is None:
            raise ConfigError(f"The {self.name} family has no per-word feature extractor; "
                              f"families with one: "
                              f"{', '.join(f.name for f in FAMILIES if f.features)}.")
        return self.resolve(self.features)


_WORDPIECE = "keras_bert_lab.preprocessing.wordpiece:WordPieceTokenizer"
_BPE = "keras_bert_lab.preprocessing.bpe:BytePairTokenizer"
# What the BERT-style encoder families (BERT, ELECTRA) share for fine-tuning.
_ENCODER_TEXT = "keras_bert_lab.preprocessing.encoder_text:EncoderTextPreprocessor"
_TAGGING = "keras_bert_lab.preprocessing.tagging:TaggingPreprocessor"
_SPAN_QA = "keras_bert_lab.preprocessing.span_qa:SpanQAPreprocessor"
_ENCODER_FINETUNE = "keras_bert_lab.commands.finetune.encoder"

FAMILIES = (
    Family(
        "bert", "BERT", "BERT (Devlin et al. 2019) and its encoders: MiniLM, the modern options",
        backbone="backbone:BertBackbone", config="config:BertConfig", tokenizer=_WORDPIECE,
        tasks={"pretrain": "pretrainer:BertPretrainer", "fill_mask": "pretrainer:BertPretrainer",
               "classify": "classifier:BertClassifier",
               "choice": "multiple_choice:BertMultipleChoice",
               "ner": "token_classifier:BertTokenClassifier", "squad": "span_qa:BertSpanQA",
               "embed": "sentence_embedder:SentenceEmbedder"},
        preprocessors={"classify": "preprocessor:BertTextPreprocessor",
                       "choice": "preprocessor:BertTextPreprocessor",
                       "ner": _TAGGING, "squad": _SPAN_QA},
        finetune=_ENCODER_FINETUNE, recipe="pretrain", cli_name="bert",
        converters={"huggingface": "convert_hf:import_hf", "google": "convert_google:import_google",
                    "keras_hub": "convert_keras_hub:import_keras_hub"},
        exporters={"huggingface": "convert_hf:export_hf",
                   "keras_hub": "convert_keras_hub:export_keras_hub"},
        hf_model_types=("bert",),
        layout="layout:backbone_rules", features="word_features:BertWordFeatures",
        exports=("saved_model", "onnx", "predict", "embed", "fill-mask"),
        distribution=("data", "model")),
    Family(
        "gpt", "GPT", "GPT-1 (Radford et al. 2018): a left-to-right decoder, task transformations",
        backbone="backbone:GPTBackbone", config="config:GPTConfig", tokenizer=_BPE,
        tasks={"pretrain": "causal_lm:GPTCausalLM", "generate": "causal_lm:GPTCausalLM",
               "classify": "classifier:GPTClassifier",
               "choice": "multiple_choice:GPTMultipleChoice",
               "ner": "token_classifier:GPTTokenClassifier", "squad": "span_qa:GPTSpanQA"},
        preprocessors={"classify": "preprocessor:GPTTaskPacker",
                       "choice": "preprocessor:GPTTaskPacker",
                       "ner": "preprocessor:GPTTaggingPreprocessor",
                       "squad": "preprocessor:GPTSpanQAPreprocessor"},
        finetune="finetune", recipe="pretrain", cli_name="gpt",
        converters={"openai": "convert:import_openai", "huggingface": "convert:import_hf"},
        exporters={"huggingface": "convert:export_hf"}, hf_model_types=("openai-gpt",),
        layout="layout:backbone_rules", distribution=("data", "model")),
    Family(
        "electra", "ELECTRA",
        "ELECTRA (Clark et al. 2020): a generator corrupts, a discriminator finds every replaced "
        "token",
        backbone="backbone:ElectraBackbone", config="config:ElectraConfig", tokenizer=_WORDPIECE,
        tasks={"pretrain": "pretrainer:ElectraPretrainer", "fill_mask": "masked_lm:ElectraMaskedLM",
               "detect": "discriminator:ElectraDiscriminator",
               "classify": "classifier:ElectraClassifier",
               "choice": "multiple_choice:ElectraMultipleChoice",
               "ner": "token_classifier:ElectraTokenClassifier", "squad": "span_qa:ElectraSpanQA"},
        preprocessors={"classify": _ENCODER_TEXT, "choice": _ENCODER_TEXT, "ner": _TAGGING,
                       "squad": _SPAN_QA},
        finetune=_ENCODER_FINETUNE, recipe="pretrain", cli_name="electra",
        converters={"huggingface": "convert_hf:import_hf"},
        exporters={"huggingface": "convert_hf:export_hf"}, hf_model_types=("electra",)),
    Family(
        "elmo", "ELMo", "ELMo (Peters et al. 2018): a character-based biLM and its scalar mix",
        backbone="backbone:ElmoBackbone", config="config:ElmoConfig",
        legacy_backbones=("ElmoBiLM",),   # its name before the family house (issue 49)
        tasks={"pretrain": "language_model:ElmoLanguageModel"},
        recipe="pretrain", cli_name="elmo", converters={"allennlp": "convert:import_original"},
        features="word_features:ElmoWordFeatures"),
    Family(
        "awd_lstm", "AWD-LSTM", "AWD-LSTM and ULMFiT (Merity et al. 2017; Howard & Ruder 2018)",
        backbone="backbone:AwdLstmBackbone", config="config:AwdLstmConfig",
        tokenizer="keras_bert_lab.preprocessing.word_tokenizer:WordTokenizer",
        tasks={"pretrain": "language_model:AwdLstmLanguageModel",
               "classify": "ulmfit_classifier:UlmfitClassifier"},
        finetune="finetune", recipe="pretrain", cli_name="awd-lstm"),
    Family(
        "word2vec", "word2vec",
        "word2vec (Mikolov et al. 2013): skip-gram, CBOW, negative sampling",
        backbone="model:Word2Vec", recipe="pretrain"),
)
_BY_NAME = {f.name: f for f in FAMILIES}
_BY_NAME.update({f.cli_name: f for f in FAMILIES if f.cli_name})


def names():
    """The family names, in declaration order."""
    return [f.name for f in FAMILIES]


def get(name):
    """The family called ``name`` (or its ``kbl pretrain --model`` spelling)."""
    if name not in _BY_NAME:
        raise ConfigError(f"Unknown model family {name!r}; the families are "
                          f"{', '.join(names())}.")
    return _BY_NAME[name]


def for_backbone(class_name):
    """The family whose presets hold a ``class_name`` backbone, or ``None``."""
    for family in FAMILIES:
        if class_name in family.backbone_names:
            return family
    return None


def for_preset(preset):
    """The family of a read :class:`~keras_bert_lab.presets.format.Preset`: the one it records,
    else (a preset written before families were recorded) its backbone class's.

    A family this version does not know is a ``PresetError`` naming it and the way out."""
    recorded = getattr(preset, "family_name", None)
    family = _BY_NAME.get(recorded) if recorded else for_backbone(preset.backbone_class)
    if family is not None and preset.backbone_class not in family.backbone_names:
        raise PresetError(
            f"Preset {preset.directory} records family {family.name!r} but holds a "
            f"{preset.backbone_class}, which is not a {family.name} backbone "
            f"({', '.join(family.backbone_names)}); its config.json is inconsistent — re-create "
            "the preset.")
    if family is None:
        what = f"family {recorded!r}" if recorded else f"backbone {preset.backbone_class!r}"
        version = preset.metadata.get("keras_bert_lab_version", "another version")
        raise PresetError(
            f"Preset {preset.directory} holds a model of {what} ({preset.backbone_class}), which "
            f"this keras_bert_lab does not know (its families: {', '.join(names())}); load it "
            f"with keras_bert_lab {version}, which wrote it, or re-create it.")
    return family


def for_format(format, family=None):
    """``(family, converter)`` for a checkpoint ``format`` (what builds a named preset);
    ``family`` (a name) picks one when several families read that format."""
    if family is not None:
        return get(family), get(family).converter(format)
    readers = [f for f in FAMILIES if format in f.converters]
    if len(readers) != 1:
        known = sorted({fmt for f in FAMILIES for fmt in f.converters})
        raise PresetError(
            f"Checkpoint format {format!r} is read by "
            f"{'the families ' + ', '.join(f.name for f in readers) if readers else 'no family'}"
            f"; {'name the family' if readers else 'known formats: ' + ', '.join(known)}.")
    return readers[0], readers[0].converter(format)


def for_hf_model_type(model_type, where="config.json"):
    """The family whose ``huggingface`` converter reads ``model_type`` checkpoints (a
    ``config.json``'s ``model_type``); ``PresetError`` naming the types that are read."""
    for family in FAMILIES:
        if model_type in family.hf_model_types:
            return family
    known = ", ".join(f"{t!r} ({f.name})" for f in FAMILIES for t in f.hf_model_types)
    raise PresetError(f"{where} describes a {model_type!r} model; the Hugging Face model types "
                      f"converted here are {known}.")


def family_of(thing):
    """The :class:`Family` of ``thing``: a family (or its name), a read preset, or a model,
    task, config or class of one of the families' folders (a subclass defined elsewhere counts
    as its base's family).

    A preset *name or directory* is read first: ``presets.read_preset(p).family``.
    """
    if isinstance(thing, Family):
        return thing
    if isinstance(thing, str):
        if thing in _BY_NAME:
            return _BY_NAME[thing]
        raise ConfigError(f"{thing!r} is not a model family ({', '.join(names())}); for a "
                          "preset name or directory use presets.read_preset(preset).family.")
    if hasattr(thing, "backbone_class") and hasattr(thing, "directory"):   # a read Preset
        return for_preset(thing)
    cls = thing if isinstance(thing, type) else type(thing)
    for klass in cls.__mro__:
        parts = klass.__module__.split(".")
        if ".".join(parts[:2]) == PACKAGE and len(parts) > 3 and parts[2] in _BY_NAME:
            return _BY_NAME[parts[2]]
    raise ConfigError(f"{cls.__name__} belongs to no model family ({', '.join(names())}): it "
                      "is neither defined in a family's folder nor derived from a class that is.")


def require(preset, family, purpose):
    """``PresetError`` unless the read ``preset`` holds a model of ``family`` (a
    :class:`Family`, its name, or a class of it); ``purpose`` ends the message (what needs it).
    Returns the family."""
    expected, found = family_of(family), for_preset(preset)
    if found is not expected:
        loader = found.backbone.rpartition(":")[2]
        raise PresetError(
            f"Preset {preset.directory} holds a {found.name} model ({preset.backbone_class}), not "
            f"a {expected.name} one; {purpose}. Load it with {loader}.from_preset (or "
            "keras_bert_lab.models.backbone.Backbone.from_preset, which picks the family).")
    return expected


def preprocessor_for(preset, kind, cls):
    """The class that preprocesses task ``kind`` for a read preset's family: ``cls`` itself or
    the family's subclass of it (``SpanQAPreprocessor.from_preset`` of a GPT preset builds GPT's
    rows); ``ConfigError`` when the family's preprocessor is no ``cls``."""
    family = for_preset(preset)
    own = family.preprocessor(kind)
    if not issubclass(own, cls):
        raise ConfigError(f"Preset {preset.directory} is a {family.name} preset, whose {kind} "
                          f"preprocessor is {own.__name__}, not a {cls.__name__}; use "
                          f"{own.__name__}.from_preset.")
    return own


def lazy_exports(package, names):
    """A module ``__getattr__`` (PEP 562) for a family's ``__init__``: ``names`` maps each public
    name of its text side (which loads TensorFlow) to its module, imported on first use — so
    ``import keras_bert_lab`` stays free of TensorFlow on the JAX and PyTorch backends while
    ``from keras_bert_lab.models.bert import BertTextPreprocessor`` works."""
    def __getattr__(name):
        if name in names:
            return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
