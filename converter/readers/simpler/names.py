"""How simpler's tools name tasks, functions and cores (format reference sections 2.4, 3.5,
4 and 5.3), so a trace reads like the runtime's own."""

from __future__ import annotations

from .deps import Deps


def token(task_id: int) -> str:
    """``t<local>`` on ring 0, else ``r<ring>t<local>`` (ring masked to 8 bits, as shown)."""
    ring = (task_id >> 32) & 0xFF
    local = task_id & 0xFFFFFFFF
    return f"t{local}" if ring == 0 else f"r{ring}t{local}"


def letters(n: int) -> str:
    """Bijective base 26: 0 -> a, 25 -> z, 26 -> aa."""
    out = []
    n += 1
    while n > 0:
        n -= 1
        out.append(chr(97 + n % 26))
        n //= 26
    return "".join(reversed(out))


def function_name(func_id: int | None, names: dict[int, str]) -> str:
    """The label of a function id without the task: name map entry, else ``func_<id>_<l>``,
    else (no id) ``task``."""
    if func_id is None or func_id < 0:
        return "task"
    name = names.get(func_id)
    return name if name is not None else f"func_{func_id}_{letters(func_id)}"


def spmd(name: str) -> str:
    return name if "spmd" in name.lower() else name + "_spmd"


def row_func_id(kernels: list[int], core_type: str) -> int | None:
    """The function of a row: an AIC row runs ``kernel_ids[0]``; an AIV row ``[1]``, or
    ``[2]`` when ``[1]`` is unused (the runtime cannot tell the two AIV slots apart)."""
    if core_type == "aic":
        f = kernels[0]
    else:
        f = kernels[1] if kernels[1] >= 0 else kernels[2]
    return f if f >= 0 else None


def task_function(task_id: int, deps: Deps | None, names: dict[int, str]) -> str:
    """A task's label without its token when no row says which core type ran it (markers,
    allocations): the first function it has."""
    info = deps.tasks.get(task_id) if deps is not None else None
    if info is None:
        return "task"
    f = next((k for k in info[0] if k >= 0), None)
    name = function_name(f, names)
    return spmd(name) if info[1] > 1 and f is not None else name


def core_lane(core: int, core_type: str) -> str:
    if core_type == "aic":
        return f"AIC_{core}"
    if core_type == "aiv":
        return f"AIV_{core}"
    return f"CORE_{core}"
