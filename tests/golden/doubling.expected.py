def doubling_vjp(x):
    y = x * 2  # functions.py:37
    _n0 = 0  # functions.py:38
    while np.linalg.norm(y) < 100:
        _n0 += 1
        y = y * 2  # functions.py:39
    def doubling_pullback(y_bar):
        x_bar = scale_repeated(y_bar, 2, _n0, 2)  # functions.py:37
        return finalize(x_bar, x)
    return y, doubling_pullback
