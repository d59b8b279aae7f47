"""Run by the fuzzer with NesTools' own venv: the official `evaluation/eval.py`'s `eval` function on one
file, as its `main()` calls it with the defaults (`--target_depths 1 2 3 4 5`, no structure key), its
modules imported once. Serves one request per stdin line, `[FILE, RESULT_CSV]`, with one JSON line:
`{"printed": [the numbers of its main line]}`, or `{"error": "Type: message"}` where eval.py raises.

    python nestools_official.py NESTOOLS_CHECKOUT
"""

import contextlib
import io
import json
import os
import sys

root = sys.argv[1]
os.chdir(root)
sys.path.insert(0, os.path.join(root, "evaluation"))
from eval import eval as official_eval  # type: ignore[import-not-found]  # noqa: E402  (the official code)

for request in sys.stdin:
    path, result = json.loads(request)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            official_eval("data/test_data.jsonl", [path], "inference/build_test_prompt/test_api_ids.jsonl", result,
                          [1, 2, 3, 4, 5], None, False)
        lines = out.getvalue().splitlines()
        answer: dict[str, object] = {"printed": lines[lines.index("*************start**************") + 1].split()}
    except Exception as exc:  # noqa: BLE001 - eval.py stops here
        answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    try:
        print(json.dumps(answer), flush=True)
    except BrokenPipeError:  # the fuzzer stopped
        break
