"""A gensim topic model trained on private 20 Newsgroups posts.

    python examples/gensim_topics.py [--epsilon 15] [--per-group 200] [--vocab-size 20000]

Posts of six newsgroups (dxp_plugins.datasets.load_20newsgroups, training split) go through
spaCy with the dxp_privatizer component; its per-token private words (``token._.dxp_text``)
are the token lists gensim wants. One LdaModel is trained on the clean posts and one on the
private posts; the script prints both models' topics side by side and how well each model's
dominant topic per post recovers the newsgroup (normalised mutual information; evaluation
only -- the private model never sees a raw post).
"""

from __future__ import annotations

import argparse
import random
import time

import spacy
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, LdaModel
from gensim.parsing.preprocessing import STOPWORDS
from sklearn.metrics import normalized_mutual_info_score

import dxp_plugins as dxp
from dxp_plugins.datasets import load_20newsgroups

GROUPS = [
    "comp.graphics",
    "rec.sport.hockey",
    "sci.med",
    "sci.space",
    "soc.religion.christian",
    "talk.politics.mideast",
]


def keep(word: str) -> bool:
    return len(word) > 2 and word.isalpha() and word not in STOPWORDS


def train_lda(token_lists: list[list[str]], topics: int) -> tuple[LdaModel, list, Dictionary]:
    documents = [[word for word in tokens if keep(word)] for tokens in token_lists]
    dictionary = Dictionary(documents)
    dictionary.filter_extremes(no_below=5, no_above=0.3)
    corpus = [dictionary.doc2bow(document) for document in documents]
    # gensim's own seed only fixes the model's initialisation; the privacy noise is secure.
    model = LdaModel(corpus, id2word=dictionary, num_topics=topics, passes=8, random_state=0)
    return model, corpus, dictionary


def dominant_topics(model: LdaModel, corpus: list) -> list[int]:
    return [max(model.get_document_topics(bow), key=lambda pair: pair[1])[0] for bow in corpus]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--epsilon",
        type=float,
        default=15.0,
        help="privacy per unit of embedding distance (default 15: most words kept, so the "
        "topics stay readable; smaller is more private, e.g. 3-6)",
    )
    parser.add_argument("--per-group", type=int, default=200, help="posts per newsgroup")
    parser.add_argument("--vocab-size", type=int, default=20_000, help="GloVe words kept")
    args = parser.parse_args()
    if not 0 < args.epsilon <= 700:
        parser.error("--epsilon must be in (0, 700]")
    if args.per_group < 1:
        parser.error("--per-group must be at least 1")
    if not 1 <= args.vocab_size <= 400_000:
        parser.error("--vocab-size must be between 1 and 400,000 (GloVe 6B's size)")

    texts, groups = load_20newsgroups("train")
    sample = random.Random(0)  # which posts: public choice, not privacy noise
    rows: list[int] = []
    for group in GROUPS:
        members = [i for i, name in enumerate(groups) if name == group]
        rows += sample.sample(members, min(args.per_group, len(members)))
    posts, labels = [texts[i] for i in rows], [groups[i] for i in rows]

    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": args.epsilon, "vocab_size": args.vocab_size})
    start = time.perf_counter()
    clean_tokens, private_tokens, records = [], [], []
    for doc in nlp.pipe(posts, batch_size=64):
        clean_tokens.append([token.lower_ for token in doc if token.text.strip()])
        private_tokens.append([token._.dxp_text for token in doc if token._.dxp_text.strip()])
        records.append(dxp.Guarantee.from_dict(doc._.dxp_guarantee))
    seconds = time.perf_counter() - start
    total = dxp.Guarantee.combine(records)
    assert total is not None
    print(
        f"{len(posts)} posts from {len(GROUPS)} newsgroups: {total.tokens_privatized:,} tokens "
        f"privatized in {seconds:.0f} s ({total.tokens_privatized / seconds:,.0f} tokens/s)"
    )
    print(f"{total.statement}\n")

    results = {}
    for name, tokens in (("clean", clean_tokens), ("private", private_tokens)):
        start = time.perf_counter()
        model, corpus, dictionary = train_lda(tokens, len(GROUPS))
        coherence = CoherenceModel(
            model=model, corpus=corpus, dictionary=dictionary, coherence="u_mass"
        ).get_coherence()
        nmi = normalized_mutual_info_score(labels, dominant_topics(model, corpus))
        results[name] = (model, nmi, coherence, time.perf_counter() - start)

    print(f"{'topic':<6}{'clean posts':<58}private posts (epsilon {args.epsilon:g})")
    for topic in range(len(GROUPS)):
        words = [
            " ".join(word for word, _ in results[name][0].show_topic(topic, topn=7))
            for name in ("clean", "private")
        ]
        print(f"{topic:<6}{words[0]:<58}{words[1]}")
    print("\n| model | NMI(dominant topic, newsgroup) | u_mass coherence | LDA seconds |")
    print("|---|---|---|---|")
    for name, (_, nmi, coherence, lda_seconds) in results.items():
        print(f"| {name} | {nmi:.3f} | {coherence:.2f} | {lda_seconds:.0f} |")


if __name__ == "__main__":
    main()
