"""A tiny calculator: the sample project of `pitroom demo`."""


def add(a, b):
    return a + b


def divide(a, b):
    return a / b


def mean(xs):
    return divide(sum(xs), len(xs))
