#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prepare a training corpus for sharc-llama: tokenizer, train.bin, val.bin.

    python3 trainer/scripts/prepare_data.py --out DIR [--vocab 4096] [--corpus kjv|FILE.txt]
                                    [--tokenizer tokenizer.model] [--val-every 10]
                                    [--seed 1] [--force]

Corpus. The default, `kjv`, is the King James Bible (public domain) from Debian:
the text ships in bible-kjv-text (/usr/lib/bible.data, a compressed format) and
the `bible` program of bible-kjv prints it. Each chapter is one document, its
verses joined by single spaces (runs of spaces collapsed; no verse numbers).
A FILE.txt (UTF-8) holds documents separated by blank lines; the lines of one
document are kept, joined by newlines. For one document per line, put a blank
line between lines first (`sed G`). Every --val-every-th document (the 10th,
20th, ... by default) goes to validation, the others to training.

Tokenizer. Without --tokenizer, a Llama-style BPE SentencePiece model is trained
on the training documents: vocabulary --vocab, byte fallback, digits split,
identity normalisation, a dummy prefix, unk 0, bos 1, eos 2, no pad. Character
coverage is 1.0 (every character its own piece) unless the characters would
take more than half the vocabulary; then 0.9995, rare characters falling back to
bytes. Training is single-threaded and reads every sentence (a corpus of more
than 2 million lines is sampled with --seed), so the same input gives the same
tokenizer.model byte for byte. With --tokenizer FILE (e.g. a Llama 2
tokenizer.model), that model encodes the corpus and is copied to DIR.

Output, in DIR: tokenizer.model and tokenizer.vocab; train.bin and val.bin,
sharc token files (trainer/io/tokens.h: little-endian 32-byte header with the magic
"SHARCTOK", version 1, token width 2 when the vocabulary is at most 65536 else 4,
token count, vocabulary size, reserved 0; then the tokens), each document being
BOS followed by its tokens; data.json, the metadata. Every file is written to a
temporary name and renamed. When DIR already holds the outputs of the same
arguments and inputs, the script says "up to date" and stops; --force redoes.

Needs Debian 12's python3 with python3-sentencepiece, and for the default corpus
bible-kjv-text and bible-kjv. Exit status: 0 done or up to date, 1 error, 2 usage.
"""

import argparse
import array
import hashlib
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time

FORMAT = 1  # data.json layout and the preparation rules; bump to invalidate old outputs
SYSTEM_PYTHON = "/usr/bin/python3"
REEXEC_ENV = "SHARC_PREPARE_DATA_REEXEC"

KJV_DATA = "/usr/lib/bible.data"
KJV_RANGE = "Gen1:1-Rev22:21"
KJV_VERSE = re.compile(r"^(.+?)(\d+):(\d+) (.*)$")

MAGIC = b"SHARCTOK"
VERSION = 1
HEADER = struct.Struct("<8sIIQII")  # magic, version, width, count, vocab, reserved: 32 bytes

SPECIALS = 3  # <unk> <s> </s>
BYTE_PIECES = 256
MIN_VOCAB = SPECIALS + BYTE_PIECES + 1
MAX_VOCAB = 1 << 20  # for training here; a given tokenizer may be larger
MAX_TRAIN_SENTENCES = 2_000_000
MAX_SENTENCE_CHARS = 8192  # longer lines are cut at spaces for tokenizer training only

OUTPUTS = ("tokenizer.model", "tokenizer.vocab", "train.bin", "val.bin", "data.json")


class PrepError(Exception):
    """An error reported as one message, without a traceback."""


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_atomic(path, data):
    """Write bytes to path through a temporary file in the same directory and a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------------------
# corpus


def corpus_identity(corpus):
    """(name recorded in data.json, sha256 of the input) without reading the text."""
    if corpus == "kjv":
        if not os.path.isfile(KJV_DATA):
            raise PrepError(
                "the King James Bible is not installed (%s is missing): "
                "apt-get install bible-kjv-text bible-kjv" % KJV_DATA)
        return "kjv", sha256_file(KJV_DATA)
    if not os.path.isfile(corpus):
        raise PrepError("corpus file %s does not exist (use --corpus kjv for the King James "
                        "Bible from Debian's bible-kjv-text)" % corpus)
    try:
        return os.path.abspath(corpus), sha256_file(corpus)
    except OSError as e:
        raise PrepError("cannot read corpus %s: %s" % (corpus, e.strerror))


def read_kjv():
    """The KJV's chapters as documents, and its verses (one training sentence each)."""
    bible = shutil.which("bible")
    if bible is None:
        raise PrepError("the `bible` program is missing; it prints the King James text that "
                        "bible-kjv-text ships: apt-get install bible-kjv")
    try:
        # -f: one verse a line, "Ge1:1 In the beginning ..."; -p: the Debian data file only,
        # not a bible.data in the current directory
        run = subprocess.run([bible, "-f", "-p", os.path.dirname(KJV_DATA), KJV_RANGE],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd="/", check=False)
    except OSError as e:
        raise PrepError("cannot run %s: %s" % (bible, e.strerror))
    if run.returncode != 0:
        raise PrepError("%s failed (exit status %d): %s" % (
            bible, run.returncode, run.stderr.decode("utf-8", "replace").strip()
            or "no message; is bible-kjv-text installed?"))
    chapters, order = {}, []
    for n, line in enumerate(run.stdout.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        m = KJV_VERSE.match(line)
        if m is None:
            raise PrepError("unexpected line %d from %s: %r" % (n, bible, line[:80]))
        key = (m.group(1), int(m.group(2)))
        if key not in chapters:
            chapters[key] = []
            order.append(key)
        verse = " ".join(m.group(4).split())
        if verse:
            chapters[key].append(verse)
    docs = [chapters[k] for k in order if chapters[k]]
    return [" ".join(verses) for verses in docs], docs


def read_text_file(path):
    """Documents of a UTF-8 file separated by blank lines; their lines as training sentences."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise PrepError("cannot read corpus %s: %s" % (path, e.strerror))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise PrepError("corpus %s is not UTF-8 (byte %d, line %d)" % (path, e.start, line))
    if text.startswith("\ufeff"):
        text = text[1:]
    docs, lines_of, current = [], [], []
    for line in text.splitlines():
        line = line.rstrip()
        if line:
            current.append(line)
        elif current:
            docs.append("\n".join(current))
            lines_of.append(current)
            current = []
    if current:
        docs.append("\n".join(current))
        lines_of.append(current)
    return docs, lines_of


def split_long(line):
    """Cut a line longer than MAX_SENTENCE_CHARS at spaces (tokenizer training only)."""
    while len(line) > MAX_SENTENCE_CHARS:
        cut = line.rfind(" ", 0, MAX_SENTENCE_CHARS)
        if cut <= 0:
            cut = MAX_SENTENCE_CHARS
        yield line[:cut]
        line = line[cut:]
    if line:
        yield line


# ---------------------------------------------------------------------------------------
# tokenizer


def import_sentencepiece():
    try:
        import sentencepiece
        return sentencepiece
    except ImportError:
        pass
    here = os.path.realpath(sys.executable or "")
    if (os.path.exists(SYSTEM_PYTHON) and here != os.path.realpath(SYSTEM_PYTHON)
            and not os.environ.get(REEXEC_ENV)):
        # e.g. a virtual environment or pyenv's python3 first in PATH: Debian's has the module
        print("prepare_data: no sentencepiece in %s; running with %s" % (
            sys.executable, SYSTEM_PYTHON), file=sys.stderr)
        sys.stderr.flush()
        os.environ[REEXEC_ENV] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    raise PrepError("the Python module sentencepiece is missing: "
                    "apt-get install python3-sentencepiece (and run with %s)" % SYSTEM_PYTHON)


def vocab_text(sp):
    """tokenizer.vocab as sentencepiece writes it: piece TAB score, one a line."""
    return "".join("%s\t%g\n" % (sp.id_to_piece(i), sp.get_score(i))
                   for i in range(sp.get_piece_size())).encode("utf-8")


def train_tokenizer(spm, sentences, vocab, seed):
    """A Llama-style BPE model trained on the sentences; returns (model bytes, coverage)."""
    sentences = [s for line in sentences for s in split_long(line)]
    if len(sentences) > MAX_TRAIN_SENTENCES:
        sentences = random.Random(seed).sample(sentences, MAX_TRAIN_SENTENCES)
    chars = set()
    for s in sentences:
        chars.update(s)
    chars.add(" ")
    coverage = 1.0 if SPECIALS + BYTE_PIECES + len(chars) <= vocab // 2 else 0.9995
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model,
            model_type="bpe", vocab_size=vocab, character_coverage=coverage,
            byte_fallback=True, split_digits=True, normalization_rule_name="identity",
            remove_extra_whitespaces=False, add_dummy_prefix=True,
            allow_whitespace_only_pieces=True, max_sentencepiece_length=16,
            unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            input_sentence_size=0, shuffle_input_sentence=False,
            max_sentence_length=4 * MAX_SENTENCE_CHARS, num_threads=1, minloglevel=2)
    except RuntimeError as e:
        msg = str(e)
        m = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", msg)
        if m:
            raise PrepError("--vocab %d is too small for this corpus: it needs at least %s "
                            "(%d special and %d byte pieces and the corpus's characters)"
                            % (vocab, m.group(2), SPECIALS, BYTE_PIECES))
        m = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)",
                      msg)
        if m:
            raise PrepError("--vocab %d is too large for this corpus: at most %s"
                            % (vocab, m.group(2)))
        raise PrepError("sentencepiece training failed: %s" % msg.strip().splitlines()[-1])
    return model.getvalue(), coverage


def load_tokenizer(spm, data, what):
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(data)
    except Exception:
        raise PrepError("%s is not a sentencepiece model" % what)
    if sp.get_piece_size() <= 0:
        raise PrepError("%s has no pieces" % what)
    return sp


# ---------------------------------------------------------------------------------------
# token files


def encode(sp, docs, bos, vocab):
    """BOS + tokens of every document, concatenated, as an array of the token width."""
    code = "H" if vocab <= 65536 else ("I" if array.array("I").itemsize == 4 else "L")
    out = array.array(code)
    step = 256
    for i in range(0, len(docs), step):
        for ids in sp.encode(docs[i:i + step]):
            out.append(bos)
            if ids and max(ids) >= vocab:
                raise PrepError("the tokenizer produced id %d, not below its vocabulary %d"
                                % (max(ids), vocab))
            out.extend(ids)
    return out


def token_file(tokens, vocab):
    width = tokens.itemsize
    body = tokens
    if sys.byteorder != "little":
        body = array.array(tokens.typecode, tokens)
        body.byteswap()
    return HEADER.pack(MAGIC, VERSION, width, len(tokens), vocab, 0) + body.tobytes()


def check_token_file(path, count, vocab):
    """True when path has a valid header for count tokens of vocab and the right size."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return False
    if len(head) != HEADER.size:
        return False
    magic, version, width, n, v, reserved = HEADER.unpack(head)
    want_width = 2 if vocab <= 65536 else 4
    return (magic == MAGIC and version == VERSION and width == want_width and n == count
            and v == vocab and reserved == 0 and size == HEADER.size + n * width)


# ---------------------------------------------------------------------------------------
# main


def up_to_date(out, args_key):
    try:
        with open(os.path.join(out, "data.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or meta.get("args") != args_key:
        return False
    if not all(os.path.isfile(os.path.join(out, name)) for name in OUTPUTS):
        return False
    try:
        if sha256_file(os.path.join(out, "tokenizer.model")) != meta["tokenizer"]["sha256"]:
            return False
        vocab = meta["vocab"]
        return all(check_token_file(os.path.join(out, split + ".bin"), meta["tokens"][split],
                                    vocab) for split in ("train", "val"))
    except (KeyError, TypeError, OSError):
        return False


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="prepare_data.py",
        description="Prepare train.bin, val.bin and a tokenizer for sharc-llama.",
        epilog="The default corpus needs the Debian packages bible-kjv-text and bible-kjv; "
               "tokenizer work needs python3-sentencepiece.")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--vocab", type=int, default=None, metavar="N",
                   help="vocabulary of the trained tokenizer (default 4096)")
    p.add_argument("--corpus", default="kjv", metavar="kjv|FILE.txt",
                   help="kjv (the King James Bible, one document a chapter; default) or a "
                        "UTF-8 text file with documents separated by blank lines")
    p.add_argument("--tokenizer", metavar="MODEL",
                   help="encode with this sentencepiece model instead of training one")
    p.add_argument("--val-every", type=int, default=10, metavar="N",
                   help="every N-th document goes to validation (default 10)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of tokenizer training's sampling (default 1)")
    p.add_argument("--force", action="store_true", help="redo even when up to date")
    args = p.parse_args(argv)
    if args.val_every < 2:
        p.error("--val-every must be at least 2 (got %d)" % args.val_every)
    if args.seed < 0:
        p.error("--seed must not be negative")
    if args.tokenizer is None:
        if args.vocab is None:
            args.vocab = 4096
        if args.vocab < MIN_VOCAB:
            p.error("--vocab %d is too small: with byte fallback the vocabulary holds %d "
                    "special and %d byte pieces, so at least %d" % (
                        args.vocab, SPECIALS, BYTE_PIECES, MIN_VOCAB))
        if args.vocab > MAX_VOCAB:
            p.error("--vocab %d is too large: at most %d" % (args.vocab, MAX_VOCAB))
    return args


def inputs_key(args):
    """The corpus's identity, the given tokenizer's bytes (or None) and the key of everything
    the outputs depend on (data.json's "args")."""
    corpus_name, corpus_sha = corpus_identity(args.corpus)
    tok_in = None
    if args.tokenizer is not None:
        try:
            with open(args.tokenizer, "rb") as f:
                tok_in = f.read()
        except OSError as e:
            raise PrepError("cannot read tokenizer %s: %s" % (args.tokenizer, e.strerror))
    args_key = {
        "format": FORMAT,
        "corpus": corpus_name,
        "corpus_sha256": corpus_sha,
        "tokenizer": None if tok_in is None else sha256_bytes(tok_in),
        "vocab": args.vocab,
        "val_every": args.val_every,
        "seed": args.seed,
    }
    return corpus_name, corpus_sha, tok_in, args_key


def read_corpus(args, corpus_name):
    """The documents, each one's sentences, what the corpus is, and which are validation's."""
    if corpus_name == "kjv":
        docs, sentences_of = read_kjv()
        what = "King James Bible (Debian bible-kjv-text), one document a chapter"
    else:
        docs, sentences_of = read_text_file(args.corpus)
        what = "%s, documents separated by blank lines" % corpus_name
    if not docs:
        raise PrepError("corpus %s is empty: no documents" % corpus_name)
    is_val = [(i + 1) % args.val_every == 0 for i in range(len(docs))]
    return docs, sentences_of, what, is_val


def get_tokenizer(spm, args, tok_in, sentences_of, is_val):
    """The tokenizer's model bytes, the loaded model, where it came from, its vocabulary and
    BOS id: trained on the training documents' sentences, or the one given."""
    if tok_in is None:
        train_sentences = [s for ss, v in zip(sentences_of, is_val) if not v for s in ss]
        model, coverage = train_tokenizer(spm, train_sentences, args.vocab, args.seed)
        sp = load_tokenizer(spm, model, "the trained tokenizer")
        source = "trained: bpe, byte fallback, split digits, identity normalisation, " \
                 "character coverage %g" % coverage
    else:
        model = tok_in
        sp = load_tokenizer(spm, model, args.tokenizer)
        source = os.path.abspath(args.tokenizer)
    vocab = sp.get_piece_size()
    if tok_in is not None and args.vocab is not None and args.vocab != vocab:
        raise PrepError("--vocab %d does not match %s, which has %d pieces; leave --vocab out "
                        "with --tokenizer" % (args.vocab, args.tokenizer, vocab))
    if vocab > 0xFFFFFFFF:
        raise PrepError("vocabulary %d does not fit the token file format" % vocab)
    bos = sp.bos_id()
    if bos < 0:
        raise PrepError("the tokenizer has no BOS piece to start documents with")
    return model, sp, source, vocab, bos


def write_outputs(out, model, sp, train, val, vocab, meta):
    """Every output under a temporary name then renamed, the token files read back, data.json
    last (without it, the directory is not up to date)."""
    try:
        os.makedirs(out, exist_ok=True)
        stale = os.path.join(out, "data.json")
        if os.path.lexists(stale):
            os.unlink(stale)  # written last: without it, the directory is not up to date
        write_atomic(os.path.join(out, "tokenizer.model"), model)
        write_atomic(os.path.join(out, "tokenizer.vocab"), vocab_text(sp))
        write_atomic(os.path.join(out, "train.bin"), token_file(train, vocab))
        write_atomic(os.path.join(out, "val.bin"), token_file(val, vocab))
        for split, toks in (("train", train), ("val", val)):
            if not check_token_file(os.path.join(out, split + ".bin"), len(toks), vocab):
                raise PrepError("%s/%s.bin did not read back as written" % (out, split))
        write_atomic(os.path.join(out, "data.json"),
                     (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as e:
        raise PrepError("cannot write to %s: %s" % (out, e.strerror))


def prepare(args):
    t0 = time.monotonic()
    out = args.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise PrepError("--out %s exists and is not a directory" % out)
    corpus_name, corpus_sha, tok_in, args_key = inputs_key(args)
    if not args.force and up_to_date(out, args_key):
        print("prepare_data: %s is up to date (--force redoes it)" % out)
        return 0

    spm = import_sentencepiece()

    docs, sentences_of, what, is_val = read_corpus(args, corpus_name)
    train_docs = [d for d, v in zip(docs, is_val) if not v]
    val_docs = [d for d, v in zip(docs, is_val) if v]
    if not val_docs or not train_docs:
        raise PrepError("corpus %s has %d document(s): too few for a validation split with "
                        "--val-every %d" % (corpus_name, len(docs), args.val_every))
    t_read = time.monotonic()

    model, sp, source, vocab, bos = get_tokenizer(spm, args, tok_in, sentences_of, is_val)
    t_tok = time.monotonic()

    train = encode(sp, train_docs, bos, vocab)
    val = encode(sp, val_docs, bos, vocab)
    t_enc = time.monotonic()

    model_sha = sha256_bytes(model)
    text_bytes = {"train": sum(len(d.encode("utf-8")) for d in train_docs),
                  "val": sum(len(d.encode("utf-8")) for d in val_docs)}
    meta = {
        "corpus": corpus_name,
        "corpus_description": what,
        "corpus_sha256": corpus_sha,
        "documents": {"train": len(train_docs), "val": len(val_docs)},
        "tokens": {"train": len(train), "val": len(val)},
        "text_bytes": text_bytes,
        "vocab": vocab,
        "token_width": train.itemsize,
        "bos_id": bos,
        "eos_id": sp.eos_id(),
        "tokenizer": {"file": "tokenizer.model", "sha256": model_sha, "source": source},
        "val_every": args.val_every,
        "seed": args.seed,
        "args": args_key,
    }
    write_outputs(out, model, sp, train, val, vocab, meta)
    t_end = time.monotonic()

    tokens = len(train) + len(val)
    per_token = (text_bytes["train"] + text_bytes["val"]) / max(1, tokens - len(docs))
    print("prepare_data: %s -> %s: %d documents (%d train, %d val), %d tokens (%d train, "
          "%d val, each document BOS + its tokens, %d-byte ids); vocab %d (%s; tokenizer.model "
          "sha256 %s); %.2f text bytes per token; %.1f s (corpus %.1f s, tokenizer %.1f s, "
          "encoding %.1f s, writing %.1f s)." % (
              what, out, len(docs), len(train_docs), len(val_docs), tokens, len(train),
              len(val), train.itemsize, vocab,
              "trained BPE" if tok_in is None else "given", model_sha[:16], per_token,
              t_end - t0, t_read - t0, t_tok - t_read, t_enc - t_tok, t_end - t_enc))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return prepare(args)
    except PrepError as e:
        print("prepare_data: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("prepare_data: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
