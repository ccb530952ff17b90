def doubling_loss_value_and_grad(x, c):
    y = x * 2  # functions.py:52
    _n2 = 0  # functions.py:53
    while np.linalg.norm(y) < 100:
        _n2 += 1
        y = y * 2  # functions.py:54
    _t0 = y * c  # functions.py:55
    _t1 = np.sum(_t0)
    check_scalar(_t1, 'doubling_loss')
    y_bar = seed_times(_t0, c)  # functions.py:55
    x_bar = scale_repeated(y_bar, 2, _n2, 2)  # functions.py:52
    del y_bar
    return _t1, finalize(x_bar, x)
