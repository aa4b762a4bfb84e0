"""The README's two example outputs are what rcts prints: each ```text block
under "What the output says" names its command in the sentence before it; the test runs
that command (RCTS_NO_BUILD=1 scripts/conformance ...) and requires every line of the
block, without its `<- annotation`, to appear in the output in the same order. Allowed
differences: the commit in the version line, the seconds column, the checkout's path
(the README shows /work/main), lines the block elides with "..." and long lines it wraps
(a wrapped line is matched as a fragment of the output's line).

usage: readme_examples.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1])
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
section = readme.split("## What the output says", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"\(`(scripts/conformance[^`]*)`[^)]*\)[^`]*?```text\n(.*?)```", section, re.S)
problems = []
if len(blocks) != 2:
    problems.append(f"expected a passing and a failing example, found {len(blocks)} (command in the sentence, then a text block)")


def normalise(line):
    line = line.replace(root, "/work/main").rstrip()
    line = re.sub(r"\(([0-9a-f]{12})(-dirty)?\)", "(<commit>)", line)
    # The seconds column of the world-size table.
    line = re.sub(r"^(\s+(?:\d+|total)(?:\s+\d+){3})\s+\d+\.\d+$", r"\1 <s>", line)
    return re.sub(r"\s+", " ", line).strip()


for command, block in blocks:
    args = command.replace("'", "").split()[1:]
    env = dict(os.environ, RCTS_NO_BUILD="1", RCTS_LOG_DIR=os.path.join(os.environ.get("TMPDIR", "/tmp"), "rcts-readme-ex"))
    out = subprocess.run([os.path.join(root, "scripts", "conformance"), *args], env=env, cwd=root,
                         capture_output=True, text=True, timeout=600)
    want_rc = 0 if " 0 failed" in block.splitlines()[-1] else 1
    if out.returncode != want_rc:
        problems.append(f"{command}: exit {out.returncode}, the README's example implies {want_rc}\n{out.stderr[-2000:]}")
    got = [normalise(l) for l in out.stdout.splitlines()]
    at = 0
    for raw in block.splitlines():
        text = normalise(raw.split("<-", 1)[0])
        if text.endswith(" ..."):
            text = text[:-4]
        if text in ("", "..."):
            continue
        hit = next((i for i in range(at, len(got)) if text in got[i]), None)
        if hit is None:
            problems.append(f"{command}: README line not in the output (after line {at}): {text!r}")
        else:
            at = hit
    if any(p.startswith(command) for p in problems):
        problems.append(f"{command}: its output was:\n" + out.stdout)
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"README examples: {len(blocks)} commands, each block found in its output")
