def branch_value_and_grad(x):
    _c1 = bool(np.sum(x) > 0)  # functions.py:22
    if _c1:
        y = np.sin(x)  # functions.py:23
    else:
        y = x * x  # functions.py:25
    _t0 = np.sum(y)  # functions.py:26
    check_scalar(_t0, 'branch')
    y_bar = seed_like(y)  # functions.py:26
    if _c1:  # functions.py:22
        x_bar = y_bar * np.cos(x)  # functions.py:23
    else:
        x_bar = 2 * unbroadcast(y_bar * x, x)  # functions.py:25
    return _t0, finalize(x_bar, x)
