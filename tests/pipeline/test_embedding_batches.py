"""Embedding batches of texts of about one length (apps.pipeline.embedding.length_batches): every
text once, shortest first, no batch padded far past its shortest text nor past the word-piece cap, and the same vectors as
texts embedded one at a time. The real all-MiniLM-L6-v2, no database."""

from __future__ import annotations

import numpy as np

from apps.pipeline.embedding import Embedder, default_model_path, length_batches


def test_batches_hold_every_text_once_shortest_first_and_split_where_lengths_jump():
    lengths = [200, 12, 14, 190, 13, 15, 250, 16, 11]
    batches = length_batches(lengths, most=4)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert [[lengths[i] for i in batch] for batch in batches] == [[11, 12, 13, 14], [15, 16], [190, 200, 250]]


def test_no_batch_is_longer_than_the_most_asked_for_or_spread_past_its_shortest():
    rng = np.random.default_rng(7)
    lengths = [int(n) for n in rng.integers(5, 257, size=500)]
    batches = length_batches(lengths, most=32, spread=1.5)
    assert all(1 <= len(batch) <= 32 for batch in batches)
    assert all(max(lengths[i] for i in batch) <= 1.5 * min(lengths[i] for i in batch) for batch in batches)
    assert [lengths[batch[0]] for batch in batches] == sorted(lengths[batch[0]] for batch in batches)


def test_no_batch_pads_past_the_word_piece_cap_and_a_text_past_it_goes_alone():
    lengths = [250, 240, 256, 245, 30, 31, 600]
    batches = length_batches(lengths, most=32, spread=1.5, tokens=1000)
    assert [[lengths[i] for i in batch] for batch in batches] == [[30, 31], [240, 245, 250], [256], [600]]
    assert all(len(batch) * max(lengths[i] for i in batch) <= 1000 for batch in batches if len(batch) > 1)


def test_texts_embedded_in_length_batches_get_the_vectors_they_get_alone():
    embedder = Embedder(default_model_path(), batch_size=4, cache_size=0)
    texts = [
        "Aspirin lowers the risk of a second heart attack.",
        "Yes.",
        "The WARN report lists 111 notices of plant closings and mass layoffs filed between July 2015 and March 2016, "
        "with the employer, the city, the number of workers affected and the date each notice was received.",
        "Vitamin D deficiency is common in winter.",
        "Total | 1,204 | 3,881 | 422",
        "Mice given the drug lived longer.",
    ]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    assert together.shape == (len(texts), 384)
    assert np.allclose(together, alone, atol=1e-5)
    assert embedder.token_lengths(["Yes."]) == [4]  # [CLS] yes . [SEP]
