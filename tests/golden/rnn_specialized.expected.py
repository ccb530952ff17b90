def rnn_value_and_grad(W, xs):
    _tape = []
    _t0 = W.shape  # functions.py:30
    _t1 = _t0[0]
    h = np.zeros(_t1)
    check_sequence(xs)  # functions.py:31
    _r6 = range(len(xs))
    for _k2 in _r6:
        x = xs[_k2]
        _t3 = W @ h  # functions.py:32
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
        W_bar += np.multiply.outer(_t4_bar, h)
        h_bar = W.T @ _t4_bar
    return _t5, finalize(W_bar, W)
