"""Grad mode is per thread, as in PyTorch: one thread's no_grad() never costs another thread
its gradients, and overlapping switches in two threads never leave recording off."""

from __future__ import annotations

import threading

import numpy as np

from course_lib.functional import grad
from course_lib.tensor import Tensor, is_grad_enabled, no_grad, set_grad_enabled


def run_in_thread(target) -> None:
    errors = []

    def wrapped():
        try:
            target()
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread
            errors.append(error)

    thread = threading.Thread(target=wrapped)
    thread.start()
    return thread, errors


def test_a_new_thread_records_even_while_the_main_thread_is_in_no_grad():
    seen = {}

    def worker():
        x = Tensor([1.0, 2.0], requires_grad=True)
        seen["enabled"] = is_grad_enabled()
        (x * x).sum().backward()
        seen["grad"] = x.grad

    with no_grad():
        thread, errors = run_in_thread(worker)
        thread.join()
        assert not is_grad_enabled()
    assert not errors, errors
    assert seen["enabled"] is True
    np.testing.assert_allclose(seen["grad"], [2.0, 4.0])


def test_overlapping_switches_in_two_threads_leave_each_mode_as_it_should_be():
    """Thread A enters no_grad; thread B then enters set_grad_enabled(True) (as grad() does);
    A leaves first, B leaves last. With one process-wide flag B would restore A's False and
    recording would stay off for good."""
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    modes = {}

    def thread_a():
        with no_grad():
            a_inside.set()
            b_inside.wait(5)
            modes["a inside"] = is_grad_enabled()
        a_left.set()
        modes["a after"] = is_grad_enabled()

    def thread_b():
        a_inside.wait(5)
        with set_grad_enabled(True):
            b_inside.set()
            a_left.wait(5)
            modes["b inside"] = is_grad_enabled()
        modes["b after"] = is_grad_enabled()
        modes["b grad"] = grad(lambda x: (x * x * x).sum())(np.array([2.0])).data.tolist()

    (ta, ea), (tb, eb) = run_in_thread(thread_a), run_in_thread(thread_b)
    ta.join(10)
    tb.join(10)
    assert not ea and not eb, ea + eb
    assert modes == {"a inside": False, "a after": True, "b inside": True, "b after": True, "b grad": [12.0]}
    assert is_grad_enabled()


def test_training_in_one_thread_keeps_every_gradient_while_another_evaluates():
    steps, stop = 300, threading.Event()
    missing = []

    def evaluator():
        x = Tensor(np.ones(4), requires_grad=True)
        while not stop.is_set():
            with no_grad():
                (x * 3).sum()

    def trainer():
        w = Tensor(np.ones(4), requires_grad=True)
        for _ in range(steps):
            w.grad = None
            ((w * w).sum()).backward()
            if w.grad is None:
                missing.append(1)

    te, ee = run_in_thread(evaluator)
    tt, et = run_in_thread(trainer)
    tt.join(60)
    stop.set()
    te.join(10)
    assert not ee and not et, ee + et
    assert missing == [], f"{len(missing)} of {steps} training steps lost their gradients"


def test_one_context_manager_object_can_be_nested():
    off = no_grad()
    with off:
        with off:
            assert not is_grad_enabled()
        assert not is_grad_enabled()
    assert is_grad_enabled()
