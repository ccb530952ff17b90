def energy_value_and_grad(x, w):
    _tape = []
    _t0 = None
    h = None
    s = 0.0  # functions.py:44
    _r5 = range(x.shape[0])  # functions.py:45
    for i in _r5:
        _tape.append(_t0)  # functions.py:46
        _t0 = x[i]
        _t1 = w * _t0
        _t2 = _t1 + s
        _tape.append(h)
        h = np.tanh(_t2)
        _t3 = h * h  # functions.py:47
        _t4 = np.sum(_t3)
        s = s + _t4
    check_scalar(s, 'energy')
    s_bar = 1.0
    w_bar = zeros_like(w)
    x_bar = zeros_like(x)
    for i in reversed(_r5):  # functions.py:45
        _t3_bar = unreduce(s_bar, _t3, None, False)  # functions.py:47
        h_bar = 2 * _t3_bar * h
        _t2_bar = h_bar * (1.0 - h * h)  # functions.py:46
        h = _tape.pop()
        s_bar = s_bar + _t2_bar.sum(axis=0)
        w_bar += _t2_bar * _t0
        _t0_bar = _t2_bar * w
        x_bar += unindex(_t0_bar, x, i)
        _t0 = _tape.pop()
    return s, (finalize(x_bar, x), finalize(w_bar, w))
