"""Build generation speed: `lexsem build` with a local `chat:` generator vs a one-prompt-at-a-time
transformers `generate` loop, same model and prompts.

A small random Llama chat model (hidden 64, 2 layers, a word-level vocabulary, a chat template;
nothing downloaded) answers N captions (`--prompts`), at most `--new-tokens` tokens each, greedy.
Each phase runs in a fresh subprocess (`--phase loop|build`, its figures passed back as JSON
on stdout), so its peak RSS is its own:

- *loop*: what a script without lexsem does: `AutoModelForCausalLM` and `AutoTokenizer`, each
  caption rendered by the chat template, tokenized and passed alone to `model.generate`
  (greedy), the new tokens up to EOS decoded;
- *build cold*: `lexsem.construct.runner.build` of a one-stage recipe whose stage asks the
  generator every caption (`chat:DIR?batch_size=B`: batches of `--batch-size` prompts,
  left-padded), every answer stored in a fresh request store;
- *build rerun*: the same recipe into another folder, the same store: nothing is sent (the
  model is not even loaded).

The answers of the build must equal the loop's, caption for caption (asserted), and the rerun
must send 0 requests (asserted). Prints prompts/s of each, the ratio build/loop (target >= 3),
the same in CPU seconds of the phase's process (steadier on a shared machine), and the peak RSS
of each phase; `--json OUT` writes every figure. Both phases run torch on `--threads` threads
(default 1); `--repeats K` alternates the phases K times (default 2) and keeps the best of each.
Both phases time the model's loading too (milliseconds for this model), not Python's imports:
the loop imports transformers before its clock, the build phase first builds 2 other captions
into a store of its own.

    python bench/build_bench.py                 # 256 captions, 16 new tokens, batch 64, CPU
    python bench/build_bench.py --prompts 64
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET = 3.0
MARK = "BUILD_BENCH_RESULT "
SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
_TEXT = (
    "a the dog cat man woman horse ball box table sofa tree bus red blue green small large "
    "on under beside in with and chases rides carries sits sleeps near two three"
)
WORDS = _TEXT.split()
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'user' %}<|user|> {% else %}<|assistant|> {% endif %}"
    "{{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def captions(n: int) -> list[str]:
    """`n` distinct captions of 4 to 12 words (a fixed seed)."""
    import random

    rng = random.Random(0)
    out: dict[str, None] = {}
    while len(out) < n:
        out[" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))] = None
    return list(out)


def chat_tokenizer(vocab: list[str]) -> Any:
    """A word-level tokenizer of `vocab` (SPECIALS first) with the chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.add_special_tokens(SPECIALS)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>")  # fmt: skip
    tok.chat_template = TEMPLATE
    return tok


def write_model(folder: Path) -> Path:
    """A random Llama chat model with a word-level tokenizer and a chat template."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab = [*SPECIALS, *WORDS]
    tok = chat_tokenizer(vocab)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      max_position_embeddings=128, bos_token_id=1, eos_token_id=2)  # fmt: skip
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():  # larger weights: varied answers rather than one repeated token
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def phase_loop(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    prompts = captions(args.prompts)
    start, cpu = time.perf_counter(), cpu_seconds()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    answers = []
    with torch.inference_mode():
        for p in prompts:
            text = tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True)  # fmt: skip
            ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
            new = model.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=args.new_tokens,
            )[0, ids.shape[1] :].tolist()  # fmt: skip
            if tok.eos_token_id in new:
                new = new[: new.index(tok.eos_token_id)]
            answers.append(tok.decode(new, skip_special_tokens=True).strip())
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"seconds": seconds, "cpu": cpu, "answers": answers, "peak_rss_mib": peak_rss_mib()}


def phase_build(args: argparse.Namespace) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    from lexsem.construct.catalog import register_stage
    from lexsem.construct.runner import build
    from lexsem.construct.stage import StageContext, accepted
    from lexsem.engine import chat  # noqa: F401  (imported before the clock, as the loop's)
    from lexsem.models.backends import text_chat  # noqa: F401

    torch.set_num_threads(args.threads)

    def ask_all(rows: pa.Table, ctx: StageContext) -> pa.Table:
        answers = ctx.ask(rows.filter(accepted(rows))["caption"].to_pylist())
        return rows.append_column("answer", pa.array(answers, pa.string()))

    register_stage("bench_ask_all", ask_all, generator=True, replace=True,
                   requests=lambda rows: rows["caption"].to_pylist())  # fmt: skip
    work = Path(tempfile.mkdtemp(dir=args.work, prefix="build-"))  # a fresh store each run
    data = work / "captions.jsonl"
    data.write_text("".join(json.dumps({"caption": c}) + "\n" for c in captions(args.prompts)))
    recipe = work / "recipe.toml"
    spec = f"chat:{args.model}?max_new_tokens={args.new_tokens}&batch_size={args.batch_size}"
    recipe.write_text(f'name = "bench"\ngenerator = "{spec}"\n[input]\npath = "{data}"\n'
                      '[[stages]]\nuse = "bench_ask_all"\n')  # fmt: skip
    # a 2-caption build first, into a store of its own: Python's imports of the build's modules
    # are then done (the loop's transformers import is outside its clock too)
    warm = work / "warm"
    warm.mkdir()
    (warm / "c.jsonl").write_text("".join(json.dumps({"caption": c}) + "\n" for c in captions(2)))
    (warm / "r.toml").write_text(recipe.read_text().replace(str(data), str(warm / "c.jsonl")))
    build(warm / "r.toml", warm / "out", cache_dir=warm / "cache", echo=lambda t: None)
    out = {}
    for run in ("cold", "rerun"):
        start, cpu = time.perf_counter(), cpu_seconds()
        res = build(recipe, work / f"out-{run}", cache_dir=work / "cache", echo=lambda t: None)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        answers = pq.read_table(res.output)["answer"].to_pylist()
        out[run] = {"seconds": seconds, "cpu": cpu, "sent": res.sent, "answers": answers}
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def run_phase(phase: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--model", args.model, "--work",
           args.work, "--prompts", str(args.prompts), "--new-tokens", str(args.new_tokens),
           "--batch-size", str(args.batch_size), "--threads", str(args.threads)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"phase {phase} failed:\n{done.stderr[-4000:]}")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith(MARK))
    return json.loads(line[len(MARK) :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of both phases")
    ap.add_argument("--repeats", type=int, default=2, help="loop, build, ...: best of each")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--phase", choices=["loop", "build"], default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.phase is not None:
        result = phase_loop(args) if args.phase == "loop" else phase_build(args)
        print(MARK + json.dumps(result))
        return
    with tempfile.TemporaryDirectory(prefix="lexsem-build-bench-") as tmp:
        args.work = tmp
        args.model = str(write_model(Path(tmp) / "model"))
        loops, builds = [], []
        for _ in range(max(1, args.repeats)):
            loops.append(run_phase("loop", args))
            builds.append(run_phase("build", args))
    loop = min(loops, key=lambda r: r["seconds"])
    built = min(builds, key=lambda r: r["cold"]["seconds"])
    cold, rerun = built["cold"], built["rerun"]
    n = args.prompts
    for other in builds:
        assert other["cold"]["sent"] == n, "the cold build did not send every request"
        assert other["cold"]["answers"] == loop["answers"] and other["rerun"]["sent"] == 0
    assert cold["answers"] == loop["answers"], "the build's answers differ from the loop's"
    assert rerun["answers"] == loop["answers"] and rerun["sent"] == 0, "the rerun sent requests"
    assert len(set(loop["answers"])) > n // 4, "too few distinct answers for a real check"
    ratio = loop["seconds"] / cold["seconds"]
    cpu_ratio = loop["cpu"] / cold["cpu"]
    print(f"build generation: {n} captions, {args.new_tokens} new tokens, greedy, CPU "
          f"({platform.machine()}, {os.cpu_count()} cores, {args.threads} torch thread(s)), "
          f"batch {args.batch_size}, best of {args.repeats}")  # fmt: skip
    print(
        f"  one-at-a-time generate loop  {n / loop['seconds']:8.1f} prompts/s  "
        f"({loop['seconds']:.2f} s, peak RSS {loop['peak_rss_mib']:.0f} MiB)"
    )
    print(
        f"  lexsem build (cold)          {n / cold['seconds']:8.1f} prompts/s  "
        f"({cold['seconds']:.2f} s, {cold['sent']} requests sent)"
    )
    print(
        f"  lexsem build (rerun)         {n / rerun['seconds']:8.1f} prompts/s  "
        f"({rerun['seconds']:.2f} s, {rerun['sent']} requests sent; "
        f"peak RSS of both builds {built['peak_rss_mib']:.0f} MiB)"
    )
    print(f"  answers identical to the loop's: {n}/{n}")
    verdict = "meets" if ratio >= TARGET else "BELOW"
    print(
        f"  ratio build/loop {ratio:.2f}x wall clock ({verdict} the {TARGET:.0f}x target), "
        f"{cpu_ratio:.2f}x in CPU seconds ({loop['cpu']:.2f} s / {cold['cpu']:.2f} s)"
    )
    if args.json is not None:
        figures = {"prompts": n, "new_tokens": args.new_tokens, "batch_size": args.batch_size,
                   "loop_s": loop["seconds"], "build_s": cold["seconds"],
                   "rerun_s": rerun["seconds"], "rerun_sent": rerun["sent"], "ratio": ratio,
                   "cpu_ratio": cpu_ratio, "loop_cpu_s": loop["cpu"], "build_cpu_s": cold["cpu"],
                   "loop_peak_rss_mib": loop["peak_rss_mib"],
                   "build_peak_rss_mib": built["peak_rss_mib"]}  # fmt: skip
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if ratio < TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
