def rnn_value_and_grad(W, xs):
    _tape = []
    _t3 = None
    _t0 = W.shape  # functions.py:30
    _t1 = _t0[0]
    h = np.zeros(_t1)
    check_sequence(xs)  # functions.py:31
    _r6 = range(len(xs))
    for _k2 in _r6:
        x = xs[_k2]
        _tape.append(shape_of(_t3))  # functions.py:32
        _t3 = W @ h
        _t4 = _t3 + x
        _tape.append(h)
        h = np.tanh(_t4)
    _t5 = np.sum(h)  # functions.py:33
    check_scalar(_t5, 'rnn')
    h_bar = seed_like(h)  # functions.py:33
    W_bar = zeros_like(W)
    for _k2 in reversed(_r6):  # functions.py:31
        _t4_bar = h_bar * (1.0 - h * h)  # functions.py:32
        h = _tape.pop()
        _t3_bar = unbroadcast(_t4_bar, _t3)
        W_bar += matmul_adjoint_a(_t3_bar, W, h)
        h_bar = matmul_adjoint_b(_t3_bar, W, h)
        _t3 = _tape.pop()
    return _t5, finalize(W_bar, W)
