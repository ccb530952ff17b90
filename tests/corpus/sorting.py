"""Sorting networks and swaps: compare-and-swap with branches or np.where on distinct values.

A swap through a temporary takes ``np.copy`` of the element: sourcegrad cannot know the array is
1-D, so ``t = a[j]`` might be a view, and it refuses the write that follows it.
"""

import numpy as np

from . import case, distinct, inputs


@case(inputs(distinct(6)))
def bubble_sort_where(x):
    a = x.copy()
    n = a.shape[0]
    for i in range(n):
        for j in range(n - 1 - i):
            lo = np.minimum(a[j], a[j + 1])
            hi = np.maximum(a[j], a[j + 1])
            a[j] = lo
            a[j + 1] = hi
    return np.sum(a * np.arange(1.0, n + 1))


@case(inputs(distinct(6)))
def bubble_sort_branch_swap(x):
    a = x * 1.0
    n = a.shape[0]
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                t = np.copy(a[j])
                a[j] = a[j + 1]
                a[j + 1] = t
    w = np.linspace(-1.0, 1.0, n)
    return np.sum(np.sin(a) * w)


@case(inputs(distinct(7)))
def odd_even_transposition(x):
    a = x.copy()
    n = a.shape[0]
    for r in range(n):
        for j in range(r % 2, n - 1, 2):
            first = np.copy(a[j])
            second = np.copy(a[j + 1])
            a[j] = np.where(first < second, first, second)
            a[j + 1] = np.where(first < second, second, first)
    return np.sum(a * a * np.arange(n))


@case(inputs(distinct(5)))
def insertion_sort(x):
    a = x.copy()
    for i in range(1, a.shape[0]):
        j = i
        while j > 0 and a[j - 1] > a[j]:
            t = np.copy(a[j - 1])
            a[j - 1] = a[j]
            a[j] = t
            j -= 1
    return a[0] * 3.0 + a[-1] * 2.0 + np.sum(a[1:-1] ** 3)


@case(inputs(distinct(3)))
def median_of_three(x):
    a = x[0]
    b = x[1]
    c = x[2]
    if a > b:
        a, b = b, a
    if b > c:
        b, c = c, b
    if a > b:
        a, b = b, a
    return b * b + np.sin(a) * c


@case(inputs(distinct(8), 3))
def top_k_sum(x, k):
    a = x.copy()
    total = 0.0
    for r in range(k):
        best = 0
        for i in range(1, a.shape[0]):
            if a[i] > a[best]:
                best = i
        total = total + a[best] * (k - r)
        a[best] = -1e9
    return total


@case(inputs(distinct(4, 2)))
def sort_rows_by_norm(X):
    Y = X.copy()
    n = Y.shape[0]
    for i in range(n):
        for j in range(n - 1 - i):
            if np.sum(Y[j] ** 2) > np.sum(Y[j + 1] ** 2):
                row = Y[j].copy()
                Y[j] = Y[j + 1]
                Y[j + 1] = row
    return np.sum(Y[0] * 2.0 + Y[-1])


@case(inputs(distinct(6)))
def selection_sort_swaps(x):
    a = x.copy()
    n = a.shape[0]
    for i in range(n - 1):
        m = i
        for j in range(i + 1, n):
            if a[j] < a[m]:
                m = j
        if m != i:
            t = np.copy(a[i])
            a[i] = a[m]
            a[m] = t
    return np.sum(np.exp(a * 0.3) * np.arange(n))
