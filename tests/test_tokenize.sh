#!/usr/bin/env bash
# `ndgraph tokenize`: the token files Hugging Face `tokenizers` gives for the
# fixtures (tests/fixtures/tokenizer/make.py), byte for byte, through the
# command's streaming (documents past its 64 KiB chunks, cut at spaces);
# the width by vocabulary, --eot, and bad input: one line, exit 2, no file.
. "${ND_SRCDIR:-.}/tests/tap.sh"
fix="$srcdir/tests/fixtures/tokenizer"
docs="mixed.txt long-line.txt no-spaces.txt lines.txt space-runs.txt empty.txt"
python3 "$fix/corpus.py" test "$tmp/c"
ok $? "the test corpus is written"

for t in gpt2 llama2 llama3; do
  "$ndgraph" tokenize --tokenizer "$fix/$t.json" $(printf "$tmp/c/%s " $docs) -o "$tmp/$t.tokens" >"$tmp/out" 2>"$tmp/err"
  ok $? "$t: tokenize exits 0 ($(head -c 300 "$tmp/err"))"
  cmp "$tmp/$t.tokens" "$fix/expected/$t.tokens" >"$tmp/cmp" 2>&1
  ok $? "$t: the ids of tokenizers, every one ($(cat "$tmp/cmp"))"
  grep -q "tokens-u16" "$tmp/out"
  ok $? "$t: u16 for a vocabulary under 65536 ($(cat "$tmp/out"))"
  [ ! -s "$tmp/err" ]
  ok $? "$t: no progress line when stderr is not a terminal"
done

# --eot: the id put before each document
"$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/mixed.txt" "$tmp/c/mixed.txt" --eot 7 -o "$tmp/eot.tokens" >/dev/null
first=$(od -An -tu2 -N2 "$tmp/eot.tokens" | tr -d ' ')
n7=$(od -An -v -tu2 -w2 "$tmp/eot.tokens" | grep -cx ' *7')
n0=$(od -An -v -tu2 -w2 "$tmp/eot.tokens" | grep -cx ' *0')
[ "$first" = 7 ] && [ "$n0" = 2 ] # <|endoftext|> (0) stays in mixed.txt's text
ok $? "--eot 7 starts each document (first $first; $n7 sevens, $n0 zeros)"

# a vocabulary past 65536: u32, and the same ids
python3 - "$fix/gpt2.json" "$tmp/big.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
j["added_tokens"].append({"id": 70000, "content": "<|big|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
"$ndgraph" tokenize --tokenizer "$tmp/big.json" "$tmp/c/lines.txt" -o "$tmp/big.tokens" >"$tmp/out"
"$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/lines.txt" -o "$tmp/small.tokens" >/dev/null
[ "$(od -An -v -tu4 -w4 "$tmp/big.tokens" | tr -d ' ')" = "$(od -An -v -tu2 -w2 "$tmp/small.tokens" | tr -d ' ')" ] &&
  grep -q tokens-u32 "$tmp/out"
ok $? "a vocabulary of 70001: u32 ids, the same ones ($(cat "$tmp/out"))"

# bad input: one line naming the file, exit 2, and no output file
expect 2 "^ndgraph: $tmp/c/nope.txt: cannot open: No such file or directory$" "a missing input" -- \
  "$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/mixed.txt" "$tmp/c/nope.txt" -o "$tmp/none.tokens"
[ ! -e "$tmp/none.tokens" ] && [ -z "$(ls "$tmp" | grep none.tokens)" ]
ok $? "no output, nor a temporary file, after a missing input"
expect 2 "^ndgraph: $tmp/nope.json: cannot open: No such file or directory$" "a missing tokenizer.json" -- \
  "$ndgraph" tokenize --tokenizer "$tmp/nope.json" "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}}}' >"$tmp/wp.json"
expect 2 "^ndgraph: $tmp/wp.json: model WordPiece is not supported$" "an unsupported model" -- \
  "$ndgraph" tokenize --tokenizer "$tmp/wp.json" "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
printf '{"model": {"type": "BPE", "vocab": {"a": 0' >"$tmp/cut.json"
expect 2 "^ndgraph: $tmp/cut.json: not a JSON object \(a tokenizer.json is\)$" "a truncated tokenizer.json" -- \
  "$ndgraph" tokenize --tokenizer "$tmp/cut.json" "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
expect 2 "gpt2.json: end-of-text id 721 is past the vocabulary \(721 ids\)$" "--eot past the vocabulary" -- \
  "$ndgraph" tokenize --tokenizer "$fix/gpt2.json" --eot 721 "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["added_tokens"] = []; json.dump(j, open(sys.argv[2], "w"))' \
  "$fix/gpt2.json" "$tmp/noeot.json"
expect 2 "noeot.json: no end-of-text token .*; give one with --eot ID$" "no end-of-text token and no --eot" -- \
  "$ndgraph" tokenize --tokenizer "$tmp/noeot.json" "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["model"]["vocab"]["zz"] = 2**31 - 1; json.dump(j, open(sys.argv[2], "w"))' \
  "$fix/gpt2.json" "$tmp/huge.json"
expect 2 "huge.json: id 2147483647: more than 16777216 ids are not supported$" "an id of 2^31 - 1: refused, not gigabytes of tables" -- \
  "$ndgraph" tokenize --tokenizer "$tmp/huge.json" "$tmp/c/mixed.txt" -o "$tmp/none.tokens"
expect 2 "^usage: ndgraph tokenize" "no -o: usage" -- "$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/mixed.txt"
"$ndgraph" tokenize --no-such-option >/dev/null 2>&1
ok $(($? != 2)) "an unknown option is exit 2"
"$ndgraph" tokenize --help | grep -q "^  tokenize --tokenizer"
ok $? "--help names tokenize"
echo old >"$tmp/keep.tokens"
"$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/mixed.txt" "$tmp/c" -o "$tmp/keep.tokens" 2>/dev/null
[ $? -eq 2 ] && [ "$(cat "$tmp/keep.tokens")" = old ]
ok $? "a directory as input: exit 2, and an existing output is left as it was"
[ ! -e "$tmp/none.tokens" ]
ok $? "no output file after any of these"

# data.tokenizer: `run` reads the text through the tokenizer, the same ids
# as the token file of `tokenize`: the same losses, bit for bit
small="--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set model.vocab_size=721
  --set train.steps=3 --set train.save_dir= --set train.eval_every=0 --set runtime.workers=1"
"$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/c/lines.txt" -o "$tmp/lines.tokens" >/dev/null
"$ndgraph" run $small --set data.train="$tmp/c/lines.txt" --set data.val="$tmp/c/long-line.txt" --set data.tokenizer="$fix/gpt2.json" \
  --metrics "$tmp/a.jsonl" >/dev/null 2>"$tmp/err"
ok $? "run with data.tokenizer ($(head -c 300 "$tmp/err"))"
"$ndgraph" run $small --set data.train="$tmp/lines.tokens" --set data.val="$tmp/lines.tokens" --set data.format=tokens-u16 \
  --metrics "$tmp/b.jsonl" >/dev/null 2>&1
a=$(metric_losses "$tmp/a.jsonl") b=$(metric_losses "$tmp/b.jsonl")
[ -n "$a" ] && [ "$a" = "$b" ]
ok $? "data.tokenizer trains as the tokenize'd file does ($a | $b)"
"$ndgraph" run $small --set data.tokenizer="$fix/gpt2.json" >/dev/null 2>"$tmp/err"
ok $? "data.tokenizer on the built-in corpus ($(head -c 300 "$tmp/err"))"
expect 2 "gpt2.json: a vocabulary of 721 ids, but model.vocab_size is 800$" "data.tokenizer: another vocabulary size" -- \
  "$ndgraph" run $small --set model.vocab_size=800 --set data.train="$tmp/c/lines.txt" --set data.val="$tmp/c/long-line.txt" \
  --set data.tokenizer="$fix/gpt2.json"
expect 2 "data.tokenizer reads text files: data.format must be text" "data.tokenizer with a token format" -- \
  "$ndgraph" run $small --set data.format=tokens-u16 --set data.tokenizer="$fix/gpt2.json"
expect 2 "wp.json: model WordPiece is not supported$" "data.tokenizer: an unsupported model" -- \
  "$ndgraph" run $small --set data.train="$tmp/c/lines.txt" --set data.val="$tmp/c/long-line.txt" --set data.tokenizer="$tmp/wp.json"

# generate and train.sample_every through the tokenizer: a text prompt
# becomes the end-of-text id and its ids, the new ids are printed as text
gen="$small --set model.seq_len=32"
"$ndgraph" run $gen --set train.steps=20 --set data.tokenizer="$fix/gpt2.json" --set train.save_dir="$tmp/gen" \
  --set train.sample_every=10 --set train.sample_tokens=6 >"$tmp/sampled" 2>&1
ok $? "a run with data.tokenizer saves a checkpoint and samples ($(tail -c 200 "$tmp/sampled"))"
grep -q "^step    10 | sample: " "$tmp/sampled" && ! grep "| sample: " "$tmp/sampled" | grep -qE "sample: ([0-9]+ )+$"
ok $? "... its samples are text, not ids"
prompt_ids=$(printf 'Once upon a time' >"$tmp/prompt.txt" && "$ndgraph" tokenize --tokenizer "$fix/gpt2.json" "$tmp/prompt.txt" -o "$tmp/p.tokens" >/dev/null 2>&1 &&
  od -An -tu2 -v "$tmp/p.tokens" | xargs | tr ' ' ',')
want=$("$ndgraph" generate $gen --checkpoint "$tmp/gen/step-20" --prompt-ids "$prompt_ids" --tokens 8 --temperature 0 2>/dev/null)
"$ndgraph" generate $gen --checkpoint "$tmp/gen/step-20" --tokenizer "$fix/gpt2.json" --prompt 'Once upon a time' \
  --tokens 8 --temperature 0 >"$tmp/text" 2>"$tmp/err"
st=$?
python3 - "$fix/gpt2.json" "$tmp/text" "$want" <<'PY'
import json, sys
# the ids' text, decoded as the byte-level decoder does: the test knows the mapping from the file
vocab = json.load(open(sys.argv[1]))["model"]["vocab"]
inv = {v: k for k, v in vocab.items()}
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
byte_of = {chr(c): b for b, c in zip(bs, cs)}
ids = [int(x) for x in sys.argv[3].split()]
text = bytes(byte_of[ch] for i in ids for ch in inv[i]).decode("utf-8", errors="replace")
got = open(sys.argv[2], encoding="utf-8", errors="replace").read()
sys.exit(0 if ids and got == text + "\n" else 1)
PY
ok $(($st + $?)) "generate --tokenizer: the prompt's ids are those of tokenize, the output the text of --prompt-ids' ids"
"$ndgraph" generate $gen --checkpoint "$tmp/gen/step-20" --set data.tokenizer="$fix/gpt2.json" --prompt 'Once upon a time' \
  --tokens 8 --temperature 0 >"$tmp/text2" 2>/dev/null
cmp -s "$tmp/text" "$tmp/text2"
ok $? "generate reads data.tokenizer when --tokenizer is not given"
expect 2 "gpt2.json: a vocabulary of 721 ids, but model.vocab_size is 800$" "generate --tokenizer: another vocabulary size" -- \
  "$ndgraph" generate $gen --set model.vocab_size=800 --checkpoint "$tmp/gen/step-20" --tokenizer "$fix/gpt2.json" --prompt x
expect 2 "--prompt TEXT: model.vocab_size is not 256 and there is no tokenizer" "generate --prompt without a tokenizer" -- \
  "$ndgraph" generate $gen --checkpoint "$tmp/gen/step-20" --prompt x

done_testing
