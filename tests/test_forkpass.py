"""fork_pass and the primitive under it (fork_child, reap), also used by ncu's isolate."""

import os
import signal

from tracecvt.forkpass import fork_child, fork_pass, reap


def test_fork_pass_returns_the_result_or_says_why_not():
    helper = fork_pass(lambda: {"pid": os.getpid(), "big": list(range(100000))})
    got = helper.result()
    assert got["pid"] != os.getpid() and got["big"][-1] == 99999 and helper.error == ""

    helper = fork_pass(lambda: {}["missing"])
    assert helper.result() is None and helper.error == "KeyError: 'missing'"

    helper = fork_pass(lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert helper.result() is None and "ended without a result" in helper.error
    assert helper.error.endswith("(killed by SIGKILL)")

    helper = fork_pass(lambda: signal.pause())
    helper.abandon()
    helper.abandon()
    assert helper.pid == 0 and helper.pipe == -1


def test_fork_child_leaves_with_the_code_of_its_body():
    def body(w):
        os.write(w, b"hello")
    pid, r = fork_child(body)
    with os.fdopen(r, "rb") as f:
        assert f.read() == b"hello"
    assert reap(pid) == 0

    def failing(w):
        raise RuntimeError("gone")
    pid, r = fork_child(failing)
    os.close(r)
    status = reap(pid)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1
    assert reap(pid) is None                    # already reaped
