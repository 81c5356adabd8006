"""A chat template rendered as transformers renders it, within bounds of time and of size.

A chat template is code that comes with a tokenizer folder, and a pull request
can bring one. transformers renders it in jinja2's
ImmutableSandboxedEnvironment, which keeps a template from Python's internals
but not from working without end: two nested ``range(100000)`` loops run for
hours, ``'x' * 3000000000`` takes 3 GB. :class:`BoundedTemplate` compiles the
template in a copy of the environment transformers compiles it in (its
options, extensions, filters and globals, taken from transformers itself, so
a template renders to the same text) with bounds added:

- time: TEMPLATE_SECONDS a conversation, and in all TEMPLATE_BASE_SECONDS plus
  TEMPLATE_SECONDS_PER_RENDER for each conversation of the batch. In the main
  thread a SIGALRM timer stops the template wherever it is; in another thread
  the clock is read at each operation the sandbox sees (a loop that calls,
  writes or computes nothing at all is then not stopped);
- size: no string, list or mapping the template builds (by ``*``, ``+``,
  ``%``, a call, a filter, a namespace attribute), and not its output, may
  hold more than the conversation's bound: TEMPLATE_BASE_CHARS plus
  TEMPLATE_CHARS_PER_CHAR for each character of the conversation. What can
  grow large in one C call (``*``, ``%``, padding, ``join``, ``replace``,
  ``indent``, ``tojson``) is checked before it is made, the rest after; a
  number may not grow past MAX_INT_BITS;
- the template itself: at most MAX_TEMPLATE_CHARS characters.

A template past a bound raises :class:`TemplateOverrun`: it is stopped, not
judged. A template that raises on a conversation (its ``raise_exception``, a
role it refuses, a syntax error) fails that conversation alone, with its
message (:class:`~trainproof.tokenizer.batches.Failed`).
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import signal
import string
import threading
import time
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

from trainproof.tokenizer.batches import MAX_REASON_CHARS, Failed
from trainproof.tokenizer.panics import one_line

TEMPLATE_SECONDS = 2.0
"""Seconds one conversation's rendering may take. A chat template renders a conversation in well under a millisecond
(Llama 3's and Qwen's with tools, a few); two seconds is a loop that does not end."""

TEMPLATE_BASE_SECONDS = 60.0
TEMPLATE_SECONDS_PER_RENDER = 0.002
"""All of a batch's renderings together may take TEMPLATE_BASE_SECONDS plus this many seconds a conversation: twenty
times what a normal template takes, and a template slow on every conversation is stopped within a minute and a bit."""

TEMPLATE_BASE_CHARS = 1 << 20
TEMPLATE_CHARS_PER_CHAR = 4
"""The most characters any value a template builds, and its output, may hold for one conversation: TEMPLATE_BASE_CHARS
(a long default system prompt and tool descriptions fit) plus this many for each character of the conversation's
roles and contents (a template writes each content once, maybe escaped)."""

MAX_TEMPLATE_CHARS = 1 << 20
"""Characters of a chat template's own text. The longest in use (tool-calling templates) are tens of KB."""

MAX_INT_BITS = 1 << 16
"""Bits a number computed by a template may have: ``*`` and ``**`` past it would run in C for as long as they like."""

_GROWING_BINOPS = frozenset({"*", "**", "+", "%"})
_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_DIGITS = re.compile(r"\d+")


class TemplateOverrun(Exception):
    """A chat template stopped past a bound, on conversation ``index`` of the batch (None: before any, compiling)."""

    def __init__(self, index: int | None, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


_ONE_OVERTIME = f"runs past {TEMPLATE_SECONDS:g} s on one conversation"


class _Stop(BaseException):
    """A bound reached inside the template. A BaseException, so that no ``except Exception`` on the way (jinja2's
    constant folding at compile time, a filter's own) takes it for the template's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Budget:
    """What the conversation being rendered may still use: a deadline (time.monotonic) and a size in characters."""

    def __init__(self) -> None:
        self.chars = TEMPLATE_BASE_CHARS
        self.deadline = math.inf
        self.overtime = "runs past its time"
        self.by_alarm = False  # a SIGALRM timer reads the clock (see _alarm_clock): tick need not

    def tick(self) -> None:
        if not self.by_alarm and time.monotonic() > self.deadline:
            raise _Stop(self.overtime)

    def fits(self, value: object) -> object:
        """``value``, when it holds at most :attr:`chars` characters; else the template is stopped."""
        self.within(_size(value, self.chars))
        return value

    def within(self, chars: int) -> None:
        if chars > self.chars:
            raise _Stop(f"builds a value of more than {self.chars:,} characters (the bound for this conversation)")

    def number(self, bits: int) -> None:
        if bits > MAX_INT_BITS:
            raise _Stop(f"computes a number of more than {MAX_INT_BITS:,} bits")


MAX_TOOLS_CHARS = 1_000_000
"""A conversation's tool schemas count towards its size bound up to this many characters (one row's own tools)."""


def _size(value: object, limit: int) -> int:
    """The characters ``value`` holds (a string's, and those of every string in a list, tuple, set or mapping, each item
    counted as one more), counted only until past ``limit``: a check costs at most that many steps."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, (list, tuple, dict, set, frozenset)):
        return 0
    total, todo = 0, [value]
    while todo and total <= limit:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (list, tuple, dict, set, frozenset)):
            total += len(item)
            if total <= limit:
                todo.extend(item.values() if isinstance(item, dict) else item)
                if isinstance(item, dict):
                    todo.extend(item.keys())
    return total


class BoundedTemplate:
    """One chat template, compiled once (at the first rendering) in transformers' environment with the bounds added.

    ``environment`` is the environment transformers compiles templates in;
    ``variables`` what transformers passes a template beside the messages
    (the tokenizer's special tokens: ``bos_token``, ``eos_token``...). One
    rendering at a time: the bounds of the conversation being rendered are
    the object's own.
    """

    def __init__(self, source: str, environment: Any, variables: Mapping[str, Any]) -> None:
        self.source = source
        self._budget = _Budget()
        self._environment = _bounded(environment, self._budget)
        self._variables = {**variables, "tools": None, "documents": None, "add_generation_prompt": False}
        self._compiled: Any = None  # the compiled template, or Failed saying why it does not compile; once known

    @classmethod
    def of(cls, tokenizer: Any, source: str) -> BoundedTemplate:
        """The template ``source`` of a transformers ``tokenizer``, in the environment its transformers compiles in."""
        return cls(source, reference_environment(tokenizer), dict(getattr(tokenizer, "special_tokens_map", None) or {}))

    def render_all(self, conversations: Sequence[Sequence[Mapping[str, str]]], tools: Sequence[Any] | None = None) -> list[str | Failed]:
        """Each conversation rendered (``add_generation_prompt=False``), or :class:`Failed` with the template's message
        where it raises. :class:`TemplateOverrun` as soon as one is past a bound: the rest are not rendered.
        ``tools``: each conversation's function schemas (the template's ``tools``, as transformers passes them), or
        None for a conversation without."""
        if not conversations:
            return []
        total = TEMPLATE_BASE_SECONDS + TEMPLATE_SECONDS_PER_RENDER * len(conversations)
        end = time.monotonic() + total
        out: list[str | Failed] = []
        with _alarm_clock(self._budget):
            compiled = self._compile(end, total)
            if isinstance(compiled, Failed):
                return [compiled] * len(conversations)
            for index, messages in enumerate(conversations):
                try:
                    offered = tools[index] if tools is not None else None
                    out.append(self._render(compiled, [m if type(m) is dict else dict(m) for m in messages], end, total, list(offered) if offered else None))
                except _Stop as stop:
                    raise TemplateOverrun(index, stop.reason) from None
                except MemoryError:
                    raise TemplateOverrun(index, "runs out of memory") from None
                except Exception as exc:  # noqa: BLE001 -- whatever the template raises fails this conversation
                    out.append(Failed(one_line(f"{type(exc).__name__}: {exc}", MAX_REASON_CHARS)))
        return out

    def _compile(self, end: float, total: float) -> Any:
        """The compiled template, or :class:`Failed` saying why it does not compile; TemplateOverrun past the bounds
        (its length, or the batch's time: jinja2 folds constant expressions while compiling)."""
        if self._compiled is not None:
            return self._compiled
        if len(self.source) > MAX_TEMPLATE_CHARS:
            raise TemplateOverrun(
                None, f"is {len(self.source):,} characters long, more than the {MAX_TEMPLATE_CHARS:,} trainproof compiles"
            )
        self._budget.chars, self._budget.deadline = TEMPLATE_BASE_CHARS, end
        self._budget.overtime = f"runs past {total:,.0f} s while being compiled"
        try:
            with _armed(self._budget):
                compiled = self._environment.from_string(self.source)
            # jinja2 makes each rendering's variables a dict of the template's globals, which it keeps as a ChainMap
            # over the environment's: read through Python, key by key, that was a quarter of a rendering. This
            # environment is the template's own and never changes, so one dict of them is the same.
            if isinstance(getattr(compiled, "globals", None), ChainMap):
                compiled.globals = dict(compiled.globals)
            self._compiled = compiled
        except _Stop as stop:
            raise TemplateOverrun(None, stop.reason) from None
        except MemoryError:
            raise TemplateOverrun(None, "runs out of memory while being compiled") from None
        except Exception as exc:  # noqa: BLE001 -- a syntax error, a nesting too deep to parse: every conversation fails
            self._compiled = Failed(one_line(f"{type(exc).__name__}: {exc}", MAX_REASON_CHARS))
        return self._compiled

    def _render(
        self, compiled: Any, messages: list[dict], end: float, total: float, tools: list | None = None
    ) -> str:
        """One conversation as ``Template.render`` writes it (the same pieces, joined), within its bounds."""
        budget = self._budget
        now = time.monotonic()
        if end - now <= TEMPLATE_SECONDS:
            deadline, budget.overtime = end, f"runs past {total:,.0f} s in all (the bound for this batch of conversations)"
        else:
            deadline, budget.overtime = now + TEMPLATE_SECONDS, _ONE_OVERTIME
        given = sum([len(str(v)) for m in messages for v in m.values()]) + (_size(tools, MAX_TOOLS_CHARS) if tools else 0)
        budget.chars = bound = TEMPLATE_BASE_CHARS + TEMPLATE_CHARS_PER_CHAR * given
        variables = self._variables if tools is None else {**self._variables, "tools": tools}
        pieces: list[str] = []
        written = 0
        _arm(budget, deadline, now)  # not a context manager: a rendering takes some 20 µs, and one was 2
        try:
            for piece in compiled.generate(variables, messages=messages):
                written += len(piece)
                if written > bound:
                    raise _Stop(f"writes more than {bound:,} characters (the bound for this conversation)")
                pieces.append(piece)
                budget.tick()
        finally:
            budget.deadline = math.inf
        return "".join(pieces)


def reference_environment(tokenizer: Any) -> Any:
    """The jinja2 environment transformers compiles chat templates in: got by compiling an empty template with
    transformers' own function (a module function since 4.43, a tokenizer method before), never the template at hand,
    which jinja2 would fold constants of while compiling (``'x' * 3000000000``: 3 GB)."""
    compile_template: Callable[..., Any] | None
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template

        compile_template = _compile_jinja_template
    except ImportError:
        compile_template = getattr(tokenizer, "_compile_jinja_template", None)
    if compile_template is None:
        raise RuntimeError("this transformers has no chat template compiler trainproof knows")
    return compile_template("").environment


# --- the environment -----------------------------------------------------------------------------------------------


def _bounded(reference: Any, budget: _Budget) -> Any:
    """An overlay of ``reference`` (its options and extensions; its filters and globals copied, never changed) whose
    growing operators, calls, filters and namespaces keep within ``budget``."""
    from jinja2.sandbox import SandboxedEnvironment

    env = reference.overlay()
    env.intercepted_binops = reference.intercepted_binops | _GROWING_BINOPS  # read while compiling
    base_binop, base_call = env.call_binop, env.call
    plain_add = type(reference).call_binop is SandboxedEnvironment.call_binop  # "+" of two strings is only that

    def call_binop(context: Any, operator: str, left: Any, right: Any) -> Any:
        if plain_add and operator == "+" and type(left) is str and type(right) is str:  # most of a chat template's work
            if len(left) + len(right) > budget.chars:
                budget.within(len(left) + len(right))
            if not budget.by_alarm:
                budget.tick()
            return left + right
        budget.tick()
        _before_binop(budget, operator, left, right)
        return budget.fits(base_binop(context, operator, left, right))

    def call(context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget.tick()
        for arg in (*args, *kwargs.values()):  # a macro's argument: a string doubled on each recursion
            if isinstance(arg, str):
                budget.within(len(arg))
        extra = _before_method(budget, getattr(obj, "__wrapped__", obj), args, kwargs)
        return budget.fits(base_call(context, obj, *_counting(args, budget, extra), **kwargs))

    env.call_binop, env.call = call_binop, call
    env.filters = {name: _bounded_filter(name, func, budget) for name, func in reference.filters.items()}
    env.globals = dict(reference.globals)
    namespace = env.globals.get("namespace")
    if isinstance(namespace, type):
        env.globals["namespace"] = _bounded_namespace(namespace, budget)
    return env


def _bounded_namespace(base: type, budget: _Budget) -> type:
    """The template's ``namespace`` class, whose attributes (``{% set ns.text = ... %}``, the one store a template's
    loop can grow from one turn to the next) keep within ``budget``."""

    def __setitem__(self: Any, name: str, value: Any) -> None:
        cast(Any, base).__setitem__(self, name, budget.fits(value))

    return type(base.__name__, (base,), {"__setitem__": __setitem__, "__module__": base.__module__})


def _bounded_filter(name: str, func: Callable[..., Any], budget: _Budget) -> Callable[..., Any]:
    before = _FILTER_CHECKS.get(name)
    signature = _signature(func) if before is not None else None

    @functools.wraps(func)  # keeps jinja2's pass_context / pass_eval_context mark
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget.tick()
        extra = 0
        if before is not None and signature is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                pass  # the filter itself says what is wrong with its arguments
            else:
                bound.apply_defaults()
                extra = before(budget, bound.arguments) or 0
        return budget.fits(func(*_counting(args, budget, extra), **kwargs))

    return bounded


def _counting(args: tuple, budget: _Budget, extra: int = 0) -> tuple:
    """``args`` with each iterator (what ``map`` and ``select`` give) counted as it is drained: what a filter or a
    method gathers from one (``join``, ``list``) may not hold more than the budget's characters in all, each item
    counting one more, and ``extra`` more (a join's separator, which the result repeats between the items)."""
    if not any(isinstance(arg, Iterator) for arg in args):
        return args
    return tuple(_counted(arg, budget, 1 + extra) if isinstance(arg, Iterator) else arg for arg in args)


def _counted(items: Iterator[Any], budget: _Budget, per_item: int) -> Iterator[Any]:
    total = 0
    for item in items:
        total += _size(item, budget.chars) + per_item
        budget.within(total)
        yield item


def _signature(func: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


# --- what is checked before it is made -------------------------------------------------------------------------------


def _before_binop(budget: _Budget, operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        if isinstance(left, int) and isinstance(right, int):
            budget.number(abs(left).bit_length() + abs(right).bit_length())
        elif isinstance(right, int) and isinstance(left, (str, list, tuple)):
            budget.within(_size(left, budget.chars) * max(right, 0))
        elif isinstance(left, int) and isinstance(right, (str, list, tuple)):
            budget.within(_size(right, budget.chars) * max(left, 0))
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            budget.number(abs(left).bit_length() * right)
    elif operator == "+":
        if isinstance(left, str) and isinstance(right, str):
            budget.within(len(left) + len(right))
    elif operator == "%" and isinstance(left, str):
        _before_percent(budget, left, right)


def _before_percent(budget: _Budget, text: str, args: Any) -> None:
    """``text % args``: no width or precision past the bound, written or (``*``) taken from the arguments."""
    starred = False
    for match in _PERCENT_SPEC.finditer(text):
        for given in match.groups():
            if given == "*":
                starred = True
            elif given:
                budget.within(int(given))
    if starred:
        for value in args if isinstance(args, (tuple, list)) else (args,):
            if isinstance(value, int):
                budget.within(abs(value))


def _before_format(budget: _Budget, text: str) -> None:
    """``text.format(...)``: no width or precision past the bound in a replacement field's format spec."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return  # str.format says what is wrong with it
    for _, _, spec, _ in fields:
        for digits in _DIGITS.findall(spec or ""):
            budget.within(int(digits))


def _before_join(budget: _Budget, separator: str, items: Any, by_attribute: bool = False) -> int:
    """``separator.join(items)``, of a list: its separators, and its strings (not known yet when the join is of an
    attribute of each item, jinja2's ``join(attribute=...)``), within the bound. The separator's length, which each
    item of an iterator adds as it is drained (:func:`_counting`)."""
    if isinstance(items, (list, tuple)):
        texts = 0 if by_attribute else sum(len(item) if isinstance(item, str) else 0 for item in items)
        budget.within(texts + len(separator) * max(len(items) - 1, 0))
    return len(separator)


def _before_replace(budget: _Budget, text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
        found = text.count(old) if old else len(text) + 1
        if isinstance(count, int) and count >= 0:
            found = min(found, count)
        budget.within(len(text) + found * (len(new) - len(old)))


def _before_method(budget: _Budget, method: Any, args: tuple, kwargs: Mapping[str, Any]) -> int:
    """A method of a string whose result can be far longer than the string (padding, tabs, join, replace, format).
    What each item of an iterator argument adds (see :func:`_before_join`)."""
    text, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(text, str):
        return 0
    ints = [value for value in (*args, *kwargs.values()) if isinstance(value, int)]
    if name in _PADDING_METHODS and ints:
        budget.within(max(ints))
    elif name == "expandtabs" and ints:
        budget.within(len(text) + text.count("\t") * max(ints))
    elif name == "join" and args:
        return _before_join(budget, text, args[0])
    elif name == "replace" and len(args) >= 2:
        _before_replace(budget, text, *args[:3])
    elif name in ("format", "format_map"):
        _before_format(budget, text)
    return 0


def _check_center(budget: _Budget, arguments: Mapping[str, Any]) -> None:
    if isinstance(arguments.get("width"), int):
        budget.within(arguments["width"])


def _check_indent(budget: _Budget, arguments: Mapping[str, Any]) -> None:
    text, width = arguments.get("s"), arguments.get("width")
    step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    if isinstance(text, str):
        budget.within(len(text) + (text.count("\n") + 1) * max(step, 0))


def _check_format(budget: _Budget, arguments: Mapping[str, Any]) -> None:
    if isinstance(arguments.get("value"), str):
        _before_percent(budget, arguments["value"], arguments.get("args") or ())


def _check_join(budget: _Budget, arguments: Mapping[str, Any]) -> int:
    separator = arguments.get("d")
    if not isinstance(separator, str):
        return 0
    return _before_join(budget, separator, arguments.get("value"), by_attribute=arguments.get("attribute") is not None)


def _check_replace(budget: _Budget, arguments: Mapping[str, Any]) -> None:
    count = arguments.get("count")
    _before_replace(budget, arguments.get("s"), arguments.get("old"), arguments.get("new"), -1 if count is None else count)


def _check_tojson(budget: _Budget, arguments: Mapping[str, Any]) -> None:
    """JSON indented by ``indent`` is its compact form plus ``indent`` characters per level on each line: measured
    exactly from the forms indented by 0 and by 1, which are no larger than the value itself and its nesting."""
    import json

    indent = arguments.get("indent")
    step = len(indent) if isinstance(indent, str) else indent if isinstance(indent, int) else 0
    if step <= 1:
        return
    value = arguments.get("x", arguments.get("value"))
    try:
        flat, one = len(json.dumps(value, indent=0)), len(json.dumps(value, indent=1))
    except (TypeError, ValueError, RecursionError):
        return  # tojson itself raises on it
    budget.within(flat + step * (one - flat))


_FILTER_CHECKS: dict[str, Callable[[_Budget, Mapping[str, Any]], int | None]] = {
    "center": _check_center,
    "indent": _check_indent,
    "format": _check_format,
    "join": _check_join,
    "replace": _check_replace,
    "tojson": _check_tojson,
}
"""The filters whose result can be far larger than their input, each checked before it runs (by jinja2's and
transformers' own parameter names); a check may return what each item of an iterator argument adds (a join's
separator)."""


# --- the clock -------------------------------------------------------------------------------------------------------


ALARM_EVERY = 0.05
"""Seconds between two readings of the clock by the SIGALRM timer: a template past its deadline is stopped within this."""


@contextmanager
def _alarm_clock(budget: _Budget) -> Iterator[None]:
    """While this context lasts, a SIGALRM timer every ALARM_EVERY seconds that stops the template once the clock is
    past the budget's deadline (math.inf between renderings), with its overtime as the reason: one timer for a batch,
    not one set and stopped around each rendering. Nothing outside the main thread (where Python runs signal
    handlers) or without setitimer: :meth:`_Budget.tick` reads the clock there. The handler and any timer set before
    are put back afterwards."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        if time.monotonic() > budget.deadline:
            raise _Stop(budget.overtime)

    started = time.monotonic()
    budget.deadline = math.inf
    previous = signal.signal(signal.SIGALRM, ring)
    outer = signal.setitimer(signal.ITIMER_REAL, ALARM_EVERY, ALARM_EVERY)
    budget.by_alarm = True
    try:
        yield
    finally:
        budget.by_alarm = False
        budget.deadline = math.inf
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if outer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - started), 1e-3), outer[1])


@contextmanager
def _armed(budget: _Budget) -> Iterator[None]:
    """The budget's deadline in force while the template runs (it is set already); past it already, its overtime."""
    _arm(budget, budget.deadline, time.monotonic())
    try:
        yield
    finally:
        budget.deadline = math.inf


def _arm(budget: _Budget, deadline: float, now: float) -> None:
    """``deadline`` in force from ``now`` on, or the budget's overtime when it has passed already."""
    if deadline <= now:
        raise _Stop(budget.overtime)
    budget.deadline = deadline
