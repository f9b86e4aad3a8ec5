"""fork_pass and the primitive under it (fork_child, reap), also used by ncu's isolate."""

import os
import signal
import time
from fractions import Fraction
from typing import Any

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


def test_a_typed_result_comes_back_equal_in_its_types_whichever_way_it_travels():
    """With ``wire``, a result comes as msgpack and reads back as that type (tuples as
    tuples, ints and floats as they were); one msgpack cannot carry (a Fraction, an int
    past 64 bits) comes pickled, the same value."""
    wire = tuple[dict[tuple[Any, str], list], list[tuple[int, int]]]
    value = ({(1, "a"): [1, 2.0, None], ("p", "b"): [True]}, [(2**63, -1)])
    got = fork_pass(lambda: value, wire).result()
    assert got == value and type(got[1][0]) is tuple and type(got[0][(1, "a")][1]) is float
    for odd in ({(1, "a"): [Fraction(1, 3)]}, {(1, "a"): [2**70]}):
        got = fork_pass(lambda: (odd, []), wire).result()
        assert got == (odd, []) and type(got[0][(1, "a")][0]) is type(odd[(1, "a")][0])
    helper = fork_pass(lambda: "not the type said", wire)
    assert helper.result() is None and "did not read back" in helper.error


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


def test_the_result_comes_once_told_and_abandon_reaps_the_child():
    # A large child takes a while to be torn down once it has told its result: the parent
    # does not wait for that (here the child lingers 5 s before it ends), and ``abandon``
    # ends and reaps it.
    def told_then_lingers():
        real_exit = os._exit
        os._exit = lambda code: (time.sleep(5), real_exit(code))
        return "told"

    helper = fork_pass(told_then_lingers)
    assert helper.result() == "told" and helper.error == ""
    pid = helper.pid
    assert os.waitpid(pid, os.WNOHANG) == (0, 0)        # still there
    helper.abandon()
    assert helper.pid == 0
    assert reap(pid) is None                            # reaped
