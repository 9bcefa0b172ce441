#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""docs_launch.py: runs every shell block of README.md and docs/*.md as written.

A fenced block tagged sh (or bash, shell) is a command listing; the line before it may say
how to run it, in an HTML comment (invisible on the rendered page):

    <!-- launch: OPTION ... -->

    skip="WHY"      not run (build steps, the test suite itself): WHY is printed
    gpu             runs only where a GPU is (nvidia-smi -L), else reported as skipped
    needs=CMD       skipped, saying so, where CMD is not installed
    on=ctl          runs on the login node of the namespace cluster (tools/nodes.sh), where
                    srun reaches Slurm and mpirun reaches the nodes
    per-node=VAR    runs on every node of the cluster at once, VAR set to the node's index
    until="REGEX"   a long run: passes once its output matches REGEX (then it is stopped)
    timeout=S       seconds it may take (default 120)

Unmarked blocks run on this machine and must succeed. Commands run with bash -e in FIXTURE
(argv[1]), where build, trainer, tools and tests lead to the tree under test, data/ and
outputs are made, `hosts` is the cluster's hostfile and `my_app` a sharc program; the
environment is the caller's. Prints ok/FAIL/skipped lines; the exit status counts failures.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import time

FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
MARK = re.compile(r"^<!--\s*launch:(.*?)-->\s*$")


def blocks(path):
    """(line, options, text) of each shell block of a Markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i
            opts = {}
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = MARK.match(lines[j].strip()) if j >= 0 else None
            if m:
                for word in shlex.split(m.group(1)):
                    key, _, value = word.partition("=")
                    opts[key] = value if _ else True
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start + 1, opts, "\n".join(body) + "\n"))
        i += 1
    return out


def run(cmd, env, timeout, until):
    """Runs cmd (a list) in its own process group; returns (passed, how, output)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    os.set_blocking(proc.stdout.fileno(), False)
    out = b""
    matched = False
    while True:
        chunk = proc.stdout.read()
        if chunk:
            out += chunk
            if until and re.search(until, out.decode(errors="replace"), re.M):
                matched = True
                break
        if proc.poll() is not None:
            out += proc.stdout.read() or b""
            break
        if time.time() - t0 > timeout:
            break
        time.sleep(0.1)
    secs = time.time() - t0
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    text = out.decode(errors="replace")
    if matched:
        return True, "reached /%s/ in %.1f s (stopped there)" % (until, secs), text
    if proc.returncode == 0 and secs <= timeout:
        return True, "succeeded in %.1f s" % secs, text
    if secs > timeout:
        return False, "still running after %d s" % timeout, text
    return False, "exited with status %d after %.1f s" % (proc.returncode, secs), text


def show(text):
    lines = text.rstrip("\n").split("\n")
    if len(lines) > 40:
        lines = lines[:15] + ["[... %d lines ...]" % (len(lines) - 35)] + lines[-20:]
    for line in lines:
        print("    " + line)


def main():
    fixture, nodes, files = sys.argv[1], os.environ.get("NODES", ""), sys.argv[2:]
    has_gpu = subprocess.call("nvidia-smi -L", shell=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) == 0
    failures = 0
    for path in files:
        name = os.path.relpath(path, os.environ.get("top_srcdir", "."))
        for line, opts, text in blocks(path):
            first = text.strip().split("\n")[0]
            what = "%s:%d: %s" % (name, line, first if len(first) < 70 else first[:67] + "...")
            if "skip" in opts:
                print("skipped: %s (%s)" % (what, opts["skip"]))
                continue
            if "gpu" in opts and not has_gpu:
                print("skipped: %s (needs a GPU)" % what)
                continue
            need = opts.get("needs")
            if need and subprocess.call(["sh", "-c", "command -v " + shlex.quote(need)],
                                        stdout=subprocess.DEVNULL) != 0:
                print("skipped: %s (needs %s, not installed)" % (what, need))
                continue
            script = "set -e\ncd %s\n%s" % (shlex.quote(fixture), text)
            timeout = float(opts.get("timeout", 120))
            until = opts.get("until")
            env = dict(os.environ)
            if "on" in opts or "per-node" in opts:
                if not nodes:
                    print("skipped: %s (needs the namespace nodes)" % what)
                    continue
            if "per-node" in opts:
                var = opts["per-node"]
                count = int(subprocess.check_output(nodes.split() + ["count"]).decode())
                script = "".join(
                    "(%s=%d %s exec %d bash -c %s) &\n" % (var, k, nodes, k, shlex.quote(script))
                    for k in range(count)) + "s=0; for p in $(jobs -p); do wait $p || s=1; done; exit $s\n"
                cmd = ["bash", "-c", script]
            elif opts.get("on") == "ctl":
                cmd = nodes.split() + ["exec", "ctl", "bash", "-c", script]
            else:
                cmd = ["bash", "-c", script]
            ok, how, out = run(cmd, env, timeout, until)
            if ok:
                print("ok: %s: %s" % (what, how))
            else:
                print("FAIL: %s: %s" % (what, how))
                show(out)
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
