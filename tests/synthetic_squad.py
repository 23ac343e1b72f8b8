"""Templated SQuAD v1.1 data for learnability and long-context checks (tests and the QA figures
in benchmarks/results/quality.md).

Usage (writes the three files the RESULTS.md commands read)::

    python -m tests.synthetic_squad /tmp/squad
"""

import json
import pathlib
import sys

import numpy as np

_PEOPLE = ("alice", "bob", "carol", "david", "emma", "frank", "grace", "henry", "julia", "kevin",
           "laura", "oscar", "peter", "sarah", "thomas", "victor")
_FACTS = {
    "color": ("red", "blue", "green", "yellow", "purple", "orange", "black", "white", "pink",
              "dark blue", "light green", "silver grey"),
    "city": ("paris", "london", "rome", "berlin", "madrid", "tokyo", "cairo", "oslo", "new york",
             "buenos aires", "hong kong", "cape town"),
    "pet": ("dog", "cat", "parrot", "rabbit", "horse", "turtle", "goat", "golden fish",
            "white mouse", "grey owl"),
    "sport": ("tennis", "football", "golf", "hockey", "cricket", "rugby", "boxing", "table tennis",
              "water polo", "ice skating"),
}
_FILLER = ("The weather was mild that day.", "Many people visited the old market.",
           "A train left the station before noon.", "The river was calm and wide.",
           "Some children played in the park.", "The library opened a new room.",
           "Music could be heard from the hall.", "A small boat crossed the lake.",
           "The shop sold bread and fresh fruit.", "Clouds moved slowly over the hills.",
           "An old bridge connects the two towns.", "The museum was closed on Monday.")


def synthetic_squad(num_questions, facts=3, filler=2, seed=0, answer_last=False,
                    same_kind=False):
    """A SQuAD v1.1 dict of templated questions, for learnability and long-context checks.

    Each context states ``facts`` facts ("The favourite city of Emma is New York.") about
    different people and attributes, shuffled among ``filler`` neutral sentences; the question asks
    for one of them ("What is the favourite city of Emma?"). Answers are one or two words. With
    ``answer_last`` the asked fact is the context's last sentence (after all the filler), which
    with much filler puts it in the last window of a long context. With ``same_kind`` every fact
    of a context is of one kind, with different values ("The favourite city of Emma is Rome. The
    favourite city of Bob is Oslo."): the asked attribute no longer picks the sentence, only the
    asked person does.

    Example:
    >>> data = synthetic_squad(2, facts=1, filler=1, seed=3)
    >>> qa = data["data"][0]["paragraphs"][0]["qas"][0]
    >>> context = data["data"][0]["paragraphs"][0]["context"]
    >>> answer = qa["answers"][0]
    >>> context[answer["answer_start"]:][:len(answer["text"])] == answer["text"]
    True
    """
    rng = np.random.default_rng(seed)
    paragraphs = []
    for number in range(num_questions):
        people = rng.choice(len(_PEOPLE), size=facts, replace=False)
        if same_kind:
            kinds = [list(_FACTS)[rng.integers(0, len(_FACTS))]] * facts
            picks = iter(rng.choice(len(_FACTS[kinds[0]]), size=facts, replace=False))
        else:
            kinds = [list(_FACTS)[k] for k in rng.integers(0, len(_FACTS), size=facts)]
        stated = []
        for person, kind in zip(people, kinds):
            values = _FACTS[kind]
            value = values[next(picks) if same_kind else rng.integers(0, len(values))]
            stated.append((_PEOPLE[person].title(), kind, value.title() if kind == "city"
                           else value))
        sentences = [f"The favourite {kind} of {person} is {value}." for person, kind, value
                     in stated]
        asked = sentences[0]
        others = sentences[1:] + [_FILLER[i] for i in rng.integers(0, len(_FILLER), size=filler)]
        order = rng.permutation(len(others) + (0 if answer_last else 1))
        pool = others + ([] if answer_last else [asked])
        sentences = [pool[i] for i in order] + ([asked] if answer_last else [])
        context = " ".join(sentences)
        person, kind, value = stated[0]
        start = context.index(asked) + asked.index(f" is {value}.") + 4
        paragraphs.append({"context": context, "qas": [{
            "id": f"synthetic-{seed}-{number}",
            "question": f"What is the favourite {kind} of {person}?",
            "answers": [{"text": value, "answer_start": start}]}]})
    return {"version": "1.1", "data": [{"title": "synthetic", "paragraphs": paragraphs}]}


def main(folder):
    """Write ``synthetic_{train,valid,long}.json`` into ``folder`` (RESULTS.md's QA data)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("train", synthetic_squad(2000, facts=3, filler=2, seed=1)),
                       ("valid", synthetic_squad(300, facts=3, filler=2, seed=2)),
                       ("long", synthetic_squad(50, facts=3, filler=250, seed=3,
                                                answer_last=True))):
        (folder / f"synthetic_{name}.json").write_text(json.dumps(data), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/squad")
