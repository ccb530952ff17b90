def basics_value_and_grad(x):
    y = x + 2  # functions.py:15
    _t0 = y * y  # functions.py:16
    z = _t0 * 3
    del _t0
    out = z.mean()  # functions.py:17
    check_scalar(out, 'basics')
    z_bar = seed_like(z, mean=True)  # functions.py:17
    _t0_bar = z_bar * 3  # functions.py:16
    del z_bar
    y_bar = 2 * unbroadcast(_t0_bar * y, y)
    del _t0_bar
    x_bar = y_bar  # functions.py:15
    del y_bar
    return out, finalize(x_bar, x)
