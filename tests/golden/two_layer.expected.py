def two_layer_value_and_grad(w1, w2, x, y):
    h = x.dot(w1)  # functions.py:7
    h_relu = np.maximum(h, 0)  # functions.py:8
    y_pred = h_relu.dot(w2)  # functions.py:9
    _t0 = y_pred - y  # functions.py:10
    _t1 = np.square(_t0)
    loss = _t1.sum()
    _t1 = shape_of(_t1)  # the backward needs only its shape
    check_scalar(loss, 'two_layer')
    _t1_bar = seed_like(_t1)  # functions.py:10
    _t0_bar = _t1_bar * 2.0 * _t0
    del _t1_bar
    y_pred_bar = unbroadcast(_t0_bar, y_pred)
    del _t0_bar
    h_relu_bar = dot_adjoint_a(y_pred_bar, h_relu, w2)  # functions.py:9
    w2_bar = dot_adjoint_b(y_pred_bar, h_relu, w2)
    del y_pred_bar
    h_bar = h_relu_bar * extremum_share(h > 0, h == 0, h_relu_bar)  # functions.py:8
    del h_relu_bar
    w1_bar = dot_adjoint_b(h_bar, x, w1)  # functions.py:7
    del h_bar
    return loss, (finalize(w1_bar, w1), finalize(w2_bar, w2))
