"""Screenshots of pull-request comments as GitHub shows them: trainproof's markdown, its tables and its Mermaid charts
drawn by mermaid itself in headless Chromium. Writes the PNGs the README shows.

    python docs/tools/comment_screenshots.py

Needs Debian's ``chromium`` and mermaid's browser bundle (``npm install --prefix .ci/node mermaid@12.3.0``, as
``.ci/run`` does, or its path in TRAINPROOF_MERMAID_JS). Each comment is rendered from the repository's own inputs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from trainproof.commands import judge, judge_compare  # noqa: E402
from trainproof.render import render  # noqa: E402

STYLE = """
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; font-size: 14px;
       line-height: 1.5; color: #1f2328; margin: 0; padding: 16px; background: #ffffff; width: 880px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; padding: 16px 20px; }
table { border-collapse: collapse; margin: 8px 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; vertical-align: top; } th { background: #f6f8fa; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 85%; background: #eff1f3; padding: .2em .4em; border-radius: 6px; }
h3 { font-size: 1.25em; margin-top: 0; } details { margin-top: 8px; } pre.mermaid { text-align: center; background: none; }
"""


def comment_html(markdown_text: str, mermaid_js: Path) -> str:
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables", "fenced_code"])
    body = re.sub(r'<pre><code class="language-mermaid">(.*?)</code></pre>', r'<pre class="mermaid">\1</pre>', body, flags=re.S)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style><script src="{mermaid_js.as_uri()}"></script></head>'
        f'<body><div class="comment">{body}</div><script>mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});'
        "mermaid.run({querySelector: 'pre.mermaid'});</script></body></html>"
    )


def screenshot(markdown_text: str, target: Path, mermaid_js: Path, chromium: str, height: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "comment.html"
        page.write_text(comment_html(markdown_text, mermaid_js), encoding="utf-8")
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={folder}/profile", "--allow-file-access-from-files",
                 "--hide-scrollbars", "--virtual-time-budget=20000", f"--window-size=914,{height}", f"--screenshot={target}"]  # fmt: skip
        subprocess.run([chromium, *flags, page.as_uri()], check=True, capture_output=True, timeout=120)


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    mermaid_js = Path(os.environ.get("TRAINPROOF_MERMAID_JS") or REPO / ".ci/node/node_modules/mermaid/dist/mermaid.min.js")
    if chromium is None or not mermaid_js.is_file():
        sys.exit("needs chromium and mermaid's bundle (see this script's docstring)")
    os.chdir(REPO)
    gallery = "examples/gallery"
    compare = render("markdown", judge_compare([f"{gallery}/bad_labels/seed0"], f"{gallery}/healthy/seed0"))
    data = render("markdown", judge("data", ["tests/data/speech_faulty", "examples/speech/ljspeech_tiny"], no_cache=True, progress=False, jobs=1))
    for name, text, height in (("comment-compare.png", compare, 1500), ("comment-data.png", data, 1900)):
        screenshot(text, REPO / "docs" / name, mermaid_js, chromium, height)
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
