"""A whole training step inside to_static (Note [Training steps] in docs/notes/jit.md):
`loss.backward(); opt.step(); opt.clear_grad()` in the converted function is one program
(forward, backward, the optimizer's update op writing the parameters and its state), equal
to eager training, step count and learning rate read at every call. What cannot be
recorded (a backward without a step, a step without clear_grad, a step alone) runs that
signature eagerly with one warning naming the call: never a program that skips or
repeats an update."""
import warnings

import numpy as np
import pytest

import oar


def make(seed=0):
    oar.seed(seed)
    return oar.nn.Sequential(oar.nn.Linear(6, 8), oar.nn.Tanh(), oar.nn.Linear(8, 1))


def batch():
    rng = np.random.default_rng(4)
    return (oar.to_tensor(rng.standard_normal((5, 6)).astype("float32")),
            oar.to_tensor(rng.standard_normal((5, 1)).astype("float32")))


OPTIMIZERS = {
    "sgd": lambda ps: oar.optimizer.SGD(learning_rate=0.05, parameters=ps),
    "momentum": lambda ps: oar.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=ps),
    "adam": lambda ps: oar.optimizer.Adam(learning_rate=0.05, parameters=ps),
    "adamw_sched": lambda ps: oar.optimizer.AdamW(
        learning_rate=oar.optimizer.lr.StepDecay(0.05, step_size=2, gamma=0.5), parameters=ps, weight_decay=0.01,
        grad_clip=oar.nn.ClipGradByGlobalNorm(0.5)),
    "sgd_l1_clip_norm": lambda ps: oar.optimizer.SGD(
        learning_rate=0.05, parameters=ps, weight_decay=oar.regularizer.L1Decay(0.01),
        grad_clip=oar.nn.ClipGradByNorm(0.05)),
    "rmsprop_centered": lambda ps: oar.optimizer.RMSProp(learning_rate=0.01, centered=True, momentum=0.5,
                                                         parameters=ps),
    "lamb": lambda ps: oar.optimizer.Lamb(learning_rate=0.05, parameters=ps),
    "nadam_groups": lambda ps: oar.optimizer.NAdam(
        learning_rate=0.05, parameters=[{"params": ps[:2], "learning_rate": 0.5}, {"params": ps[2:]}]),
}


def strict_calls(step, convert, calls):
    """`calls` calls of `step` on batch(), converted by to_static when `convert`; a
    fallback warning fails the test. Returns (the function called, the losses)."""
    fn = oar.jit.to_static(step) if convert else step
    x, y = batch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn, [float(fn(x, y)) for _ in range(calls)]


def assert_all_close(got, want, rtol, atol):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def train_step(net, opt):
    def step(x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    return step


def run(opt_name, convert, backend=None, steps=5):
    net = make()
    opt = OPTIMIZERS[opt_name](net.parameters())
    sched = opt._learning_rate if isinstance(opt._learning_rate, oar.optimizer.lr.LRScheduler) else None
    step = train_step(net, opt)
    fn = oar.jit.to_static(step, backend=backend) if convert else step
    x, y = batch()
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        for _ in range(steps):
            losses.append(float(fn(x, y)))
            if sched is not None:
                sched.step()
    return np.array(losses), [p.numpy().copy() for p in net.parameters()], fn, opt


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_training_step_converts_and_equals_eager(opt_name):
    eager_l, eager_p, _, eager_opt = run(opt_name, False)
    conv_l, conv_p, fn, opt = run(opt_name, True)
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-6, atol=1e-7)
    assert conv_l[-1] < conv_l[0]
    assert_all_close(conv_p, eager_p, rtol=1e-6, atol=1e-7)
    assert opt._step_count == eager_opt._step_count == 5
    (cp,) = fn.concrete_programs  # one program: nothing ran eagerly
    text = str(cp.program)
    assert "_update" in text and 'builtin.set_parameter"' in text and cp.backward_program is None
    assert all(p.grad is None or not p.grad.numpy().any() for p in make().parameters())


@pytest.mark.parametrize("clip", ["clip_grad_norm_", "clip_grad_norm_inf", "clip_grad_value_"])
def test_gradient_clipping_between_backward_and_step(clip):
    """nn.utils' in-place clipping of .grad between loss.backward() and opt.step() is part
    of the program: the total norm stays a tensor (no Python branch on its value)."""
    def run_clip(convert, do_clip=True):
        net = make()
        opt = oar.optimizer.SGD(learning_rate=0.5, parameters=net.parameters())

        def step(x, y):
            loss = ((net(x) - y) ** 2).mean() * 20
            loss.backward()
            if not do_clip:
                pass
            elif clip == "clip_grad_norm_":
                oar.nn.utils.clip_grad_norm_(net.parameters(), 0.3)
            elif clip == "clip_grad_norm_inf":
                oar.nn.utils.clip_grad_norm_(net.parameters(), 0.1, norm_type=float("inf"))
            else:
                oar.nn.utils.clip_grad_value_(net.parameters(), 0.02)
            opt.step()
            opt.clear_grad()
            return loss

        fn, losses = strict_calls(step, convert, 4)
        return losses, [p.numpy() for p in net.parameters()], fn

    eager_l, eager_p, _ = run_clip(False)
    conv_l, conv_p, fn = run_clip(True)
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-5)
    assert_all_close(conv_p, eager_p, rtol=1e-5, atol=1e-7)
    assert len(fn.concrete_programs) == 1  # one program: nothing ran eagerly
    # the bounds are below the gradients' norm, max and elements: the clip changed the step
    assert not np.allclose(run_clip(False, do_clip=False)[0], eager_l)


def test_training_step_under_cinn():
    eager_l, eager_p, _, _ = run("adam", False)
    conv_l, conv_p, fn, _ = run("adam", True, backend="CINN")
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-5, atol=1e-6)
    assert_all_close(conv_p, eager_p, rtol=1e-5, atol=1e-6)
    assert "kernel.compiled_kernel" in str(fn.concrete_programs[0].executed_program)


def test_converted_and_eager_steps_share_the_optimizer_state():
    # two converted steps, then an eager one: the moments and the step count carry over
    ref_l, ref_p, _, _ = run("adam", False, steps=3)
    net = make()
    opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
    step = train_step(net, opt)
    conv = oar.jit.to_static(step)
    x, y = batch()
    losses = [float(conv(x, y)), float(conv(x, y)), float(step(x, y))]
    np.testing.assert_allclose(losses, ref_l, rtol=1e-6)
    for a, b in zip([p.numpy() for p in net.parameters()], ref_p):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def fallback_case(body):
    net = make(1)
    ref = make(1)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    ref_opt = oar.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    x, y = batch()
    conv = oar.jit.to_static(lambda x, y: body(net, opt, x, y))
    with pytest.warns(UserWarning) as rec:
        for _ in range(2):
            conv(x, y)
    for _ in range(2):
        body(ref, ref_opt, x, y)
    for a, b in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    msgs = [str(w.message) for w in rec if "to_static" in str(w.message)]
    assert len(msgs) == 1, msgs  # one warning for the signature
    return msgs[0]


def accumulating_case(body, calls=4):
    """`body` leaves gradients in .grad: eager code accumulates into them across calls. The
    converted function reads the held gradients as program parameters (a variant program
    once some are held) and leaves the sums in .grad: parameters and gradients equal eager
    after every call, nothing runs eagerly."""
    net, ref = make(1), make(1)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    ref_opt = oar.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    x, y = batch()
    conv = oar.jit.to_static(lambda x, y, i: body(net, opt, x * (1 + i), y, i))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(calls):
            conv(x, y, i)
            body(ref, ref_opt, x * (1 + i), y, i)
            for a, b in zip(net.parameters(), ref.parameters()):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
                # a cleared gradient is None after a converted call, zeros after eager
                # clear_grad(set_to_zero=True): the program keeps no zero tensors
                ga = np.zeros(a.shape, "float32") if a.grad is None else a.grad.numpy()
                gb = np.zeros(b.shape, "float32") if b.grad is None else b.grad.numpy()
                np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-7)
                assert b.grad is None or a.grad is not None or not gb.any()
    assert all(cp is not None for cp in conv.concrete_programs)
    return conv


def test_step_without_clear_grad_accumulates_as_eager():
    def body(net, opt, x, y, i):
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
        return x

    accumulating_case(body)


def test_backward_without_step_accumulates_as_eager():
    def body(net, opt, x, y, i):
        ((net(x) - y) ** 2).mean().backward()
        return x

    accumulating_case(body)


def test_gradient_accumulation_steps_every_second_call():
    """The usual accumulation loop: backward every call, step and clear every second call
    (a Python int argument: one program per branch, each with and without held gradients)."""
    def body(net, opt, x, y, i):
        (((net(x) - y) ** 2).mean() / 2).backward()
        oar.nn.utils.clip_grad_value_(net.parameters(), 0.05)  # a write into .grad, not a clear
        if i % 2 == 1:
            opt.step()
            opt.clear_grad()
        return x

    accumulating_case(body, calls=6)


@pytest.mark.parametrize("clear", ["opt", "layer", "set_to_none"])
def test_step_that_clears_first_converts_and_leaves_the_gradients(clear):
    """`opt.clear_grad(); loss.backward(); opt.step()` (the PyTorch habit): the program
    returns the gradients and each call leaves them in .grad, as eager code does; gradients
    held from an eager backward before the first call are discarded by the clear, as
    eagerly."""
    def run_first(convert):
        net = make()
        opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
        x, y = batch()
        ((net(x) - y) ** 2).sum().backward()  # held gradients, discarded by the clear

        def step(x, y):
            if clear == "opt":
                opt.clear_grad()
            elif clear == "layer":
                net.clear_gradients()
            else:
                opt.clear_grad(set_to_zero=False)
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        fn = oar.jit.to_static(step) if convert else step
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i in range(4):
                loss = float(fn(x * (1 + i), y))
                out.append((loss, [p.numpy().copy() for p in net.parameters()],
                            [p.grad.numpy().copy() for p in net.parameters()]))
        return out, fn

    eager, _ = run_first(False)
    conv, fn = run_first(True)
    assert len(fn.concrete_programs) == 1  # one program: nothing ran eagerly
    for (la, pa, ga), (lb, pb, gb) in zip(eager, conv):
        np.testing.assert_allclose(lb, la, rtol=1e-6)
        for a, b in zip(pa + ga, pb + gb):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
    assert np.abs(conv[-1][2][0]).sum() > 0


@pytest.mark.parametrize("clear_d_first", [False, True])
def test_gan_step_two_backwards_two_optimizers(clear_d_first):
    """A GAN step: the discriminator's loss backward and step, then the generator's loss
    (through the updated discriminator) backward and step, in one program. The
    generator's backward also leaves gradients on the discriminator, which eager code
    accumulates into the next call's: without a clear first that is a second program,
    reading them (held gradients); with one, a single program."""
    def run_gan(convert):
        oar.seed(0)
        gen = oar.nn.Sequential(oar.nn.Linear(4, 16), oar.nn.ReLU(), oar.nn.Linear(16, 6))
        disc = oar.nn.Sequential(oar.nn.Linear(6, 16), oar.nn.LeakyReLU(0.2), oar.nn.Linear(16, 1))
        g_opt = oar.optimizer.Adam(learning_rate=1e-2, parameters=gen.parameters(), beta1=0.5)
        d_opt = oar.optimizer.Adam(learning_rate=1e-2, parameters=disc.parameters(), beta1=0.5)
        bce = oar.nn.functional.binary_cross_entropy_with_logits

        def step(z, real):
            if clear_d_first:
                d_opt.clear_grad()
            fake = gen(z)
            d_loss = bce(disc(real), oar.ones([8, 1])) + bce(disc(fake.detach()), oar.zeros([8, 1]))
            d_loss.backward()
            d_opt.step()
            d_opt.clear_grad()
            g_loss = bce(disc(fake), oar.ones([8, 1]))
            g_loss.backward()
            g_opt.step()
            g_opt.clear_grad()
            return d_loss, g_loss

        fn = oar.jit.to_static(step) if convert else step
        rng = np.random.default_rng(1)
        z = oar.to_tensor(rng.standard_normal((8, 4)).astype("float32"))
        real = oar.to_tensor(rng.standard_normal((8, 6)).astype("float32"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [[float(t) for t in fn(z, real)] for _ in range(5)]
        held = [np.zeros(p.shape, "float32") if p.grad is None else p.grad.numpy() for p in disc.parameters()]
        return losses, [p.numpy() for p in gen.parameters() + disc.parameters()], held, fn

    eager_l, eager_p, eager_g, _ = run_gan(False)
    conv_l, conv_p, conv_g, fn = run_gan(True)
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-5)
    assert_all_close(conv_p + conv_g, eager_p + eager_g, rtol=1e-5, atol=1e-6)
    assert len(fn.concrete_programs) == (1 if clear_d_first else 2)
    text = str(fn.concrete_programs[0].program)
    assert text.count("dist.adam_update") == 2


def test_replacing_grad_runs_eagerly():
    """Code that assigns another tensor to .grad between backward and step (rather than
    writing into it): the update would not read the traced gradient, so the step runs
    eagerly, equal to eager training."""
    def body(net, opt, x, y):
        ((net(x) - y) ** 2).mean().backward()
        for p in net.parameters():
            p.grad = p.grad * 0.5
        opt.step()
        opt.clear_grad()
        return x

    assert "calls SGD.step()" in fallback_case(body)


@pytest.mark.parametrize("clear", [True, False])
def test_step_alone_over_the_state_converts(clear):
    """The backward eager, the update converted: a function over the model's state that
    only steps reads the gradients the eager backward left as program parameters (zero
    ones included: the step applies weight decay to them, as eagerly)."""
    def run_alone(convert):
        net = make(2)
        opt = oar.optimizer.AdamW(learning_rate=0.05, parameters=net.parameters(), weight_decay=0.1)

        def update(x):
            opt.step()
            if clear:
                opt.clear_grad()
            return net(x).mean()  # the state: the model's parameters

        fn = oar.jit.to_static(update) if convert else update
        x, y = batch()
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                ((net(x) - y) ** 2).mean().backward()
                out.append(float(fn(x)))
        return out, [p.numpy() for p in net.parameters()], fn

    eager_o, eager_p, _ = run_alone(False)
    conv_o, conv_p, fn = run_alone(True)
    np.testing.assert_allclose(conv_o, eager_o, rtol=1e-6)
    assert_all_close(conv_p, eager_p, rtol=1e-6, atol=1e-7)
    assert all(cp.step is not None for cp in fn.concrete_programs)


def test_parameter_gradient_hooks_run_eagerly():
    """A hook on a parameter's gradient (register_hook) runs as the gradient accumulates,
    which the traced backward does not: the step runs eagerly (before, the program
    skipped the hook silently)."""
    def body(net, opt, x, y):
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
        opt.clear_grad()
        return x

    def hooked(body):
        def with_hook(net, opt, x, y):
            if not net[0].weight._has_leaf_hooks():
                net[0].weight.register_hook(lambda g: g * 0.1)
            return body(net, opt, x, y)
        return with_hook

    assert "gradient hooks (register_hook)" in fallback_case(hooked(body))


def test_step_alone_runs_eagerly():
    """A function whose state holds no parameter (the optimizer is not program state):
    the step runs eagerly."""
    net = make(2)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x, y = batch()
    ((net(x) - y) ** 2).mean().backward()
    before = [p.numpy().copy() for p in net.parameters()]

    @oar.jit.to_static
    def update(scale):
        opt.step()
        return scale * 2.0

    with pytest.warns(UserWarning, match=r"calls SGD.step\(\) inside the converted function"):
        assert float(update(oar.to_tensor(1.5))) == 3.0
    assert any(not np.array_equal(p.numpy(), b) for p, b in zip(net.parameters(), before))


def test_forward_only_conversion_is_unchanged():
    net = make(3)
    fwd = oar.jit.to_static(net)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x, y = batch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = ((fwd(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert fwd.forward.concrete_programs[0].backward_program is not None


def test_training_step_over_a_converted_layer():
    eager_l, eager_p, _, _ = run("adam", False)
    net = make()
    oar.jit.to_static(net)  # its forward inlines into the step's program
    opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
    step = oar.jit.to_static(train_step(net, opt))
    x, y = batch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = [float(step(x, y)) for _ in range(5)]
    np.testing.assert_allclose(losses, eager_l, rtol=1e-6, atol=1e-7)
    for a, b in zip([p.numpy() for p in net.parameters()], eager_p):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("form", ["step_update", "minimize", "unscale_clip", "update_outside"])
def test_grad_scaler_in_a_converted_step(form):
    """GradScaler inside the step (Note [Training steps]): the loss scale is a program
    parameter read at each call, the unscale and the inf/nan check are ops, the update op
    skips itself when found_inf holds (its `skip_input`), and the scale and counters move
    on the host after each call. The scale starts high enough that the first steps
    overflow: they are skipped and the scale falls, then the updates run and the scale
    grows (incr_every_n_steps=2), each call as eager code does."""
    def run_scaler(convert):
        net = make()
        opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
        sc = oar.amp.GradScaler(init_loss_scaling=2.0**125, incr_every_n_steps=2, decr_ratio=0.25)

        def step(x, y):
            loss = ((net(x) - y) ** 2).mean() * 1e4
            scaled = sc.scale(loss)
            scaled.backward()
            if form == "minimize":
                sc.minimize(opt, scaled)
            elif form == "unscale_clip":
                sc.unscale_(opt)
                oar.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                sc.step(opt)
                sc.update()
            else:
                sc.step(opt)
                if form == "step_update":
                    sc.update()
            opt.clear_grad()
            return loss

        fn = oar.jit.to_static(step) if convert else step
        x, y = batch()
        rec = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(9):
                loss = float(fn(x, y))
                if form == "update_outside":
                    sc.update()
                rec.append((loss, sc._scale, sc._incr_count, sc._decr_count, opt._step_count))
        return rec, [p.numpy() for p in net.parameters()], fn

    eager, eager_p, _ = run_scaler(False)
    conv, conv_p, fn = run_scaler(True)
    assert len(fn.concrete_programs) == 1  # one program: nothing ran eagerly
    assert "skip_input = true" in str(fn.concrete_programs[0].program)
    for a, b in zip(eager, conv):
        np.testing.assert_allclose(b[0], a[0], rtol=1e-5)
        assert b[1:] == a[1:]
    for a, b in zip(eager_p, conv_p):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    steps = [r[4] for r in eager]
    assert steps[0] == 0 and steps[-1] >= 2  # skipped steps first, then updates
    assert min(r[1] for r in eager) < 2.0**125 and eager[-1][1] > min(r[1] for r in eager)


@pytest.mark.parametrize("where", ["after_step", "before_backward"])
def test_scheduler_step_inside_the_converted_step(where):
    """scheduler.step() inside the function is replayed at every call, before the update
    or after it as the code does (before, it ran once at conversion and the lr stayed)."""
    def run_sched(convert):
        net = make()
        sched = oar.optimizer.lr.CosineAnnealingDecay(0.1, T_max=3)
        opt = oar.optimizer.Momentum(learning_rate=sched, momentum=0.9, parameters=net.parameters())

        def step(x, y):
            if where == "before_backward":
                sched.step()
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            if where == "after_step":
                sched.step()
            return loss

        fn = oar.jit.to_static(step) if convert else step
        x, y = batch()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rec = [(float(fn(x, y)), sched.last_epoch, opt.get_lr()) for _ in range(5)]
        return rec, [p.numpy() for p in net.parameters()], fn

    eager, eager_p, _ = run_sched(False)
    conv, conv_p, fn = run_sched(True)
    assert len(fn.concrete_programs) == 1
    for a, b in zip(eager, conv):
        np.testing.assert_allclose(b[0], a[0], rtol=1e-6)
        assert b[1:] == a[1:]
    for a, b in zip(eager_p, conv_p):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    assert len({r[2] for r in eager}) > 2  # the lr moved at every call


def test_plateau_scheduler_on_the_loss_runs_eagerly():
    """ReduceOnPlateau.step(loss) reads the loss's value: the signature runs eagerly."""
    net = make()
    sched = oar.optimizer.lr.ReduceOnPlateau(0.1, patience=0, factor=0.5)
    opt = oar.optimizer.SGD(learning_rate=sched, parameters=net.parameters())

    @oar.jit.to_static
    def step(x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        sched.step(loss * -1.0)  # a rising "metric": the lr halves at every call
        return loss

    x, y = batch()
    with pytest.warns(UserWarning, match=r"ReduceOnPlateau.step\(\) on a computed tensor"):
        step(x, y)
    for _ in range(2):
        step(x, y)
    assert sched.last_epoch == 3 and opt.get_lr() == pytest.approx(0.1 * 0.5 ** 2)


def test_amp_o2_master_weights_in_a_converted_step():
    """AMP O2 (decorate with master weights): the optimizer updates float32 masters outside
    the layer's state; they become program state, the update reads the cast gradients and
    the bfloat16 parameters are written from the masters in the program (before, the
    signature ran eagerly)."""
    def run_o2(convert):
        net = oar.nn.Sequential(oar.nn.Linear(6, 16), oar.nn.ReLU(), oar.nn.Linear(16, 1))
        oar.seed(0)
        for p in net.parameters():
            p.set_value(oar.randn(p.shape, "float32") * 0.3)
        opt = oar.optimizer.AdamW(learning_rate=0.01, parameters=net.parameters(), weight_decay=0.01)
        net, opt = oar.amp.decorate(net, opt, level="O2", dtype="bfloat16")

        def step(x, y):
            with oar.amp.auto_cast(level="O2", dtype="bfloat16"):
                out = net(x)
            loss = ((out.astype("float32") - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        fn, losses = strict_calls(step, convert, 4)
        return (losses, [p.astype("float32").numpy() for p in net.parameters()],
                [m.numpy() for _, m in opt._amp_master.pairs], fn)

    eager_l, eager_p, eager_m, _ = run_o2(False)
    conv_l, conv_p, conv_m, fn = run_o2(True)
    assert len(fn.concrete_programs) == 1
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-6)
    assert eager_l[-1] < eager_l[0]
    for a, b in zip(conv_p, eager_p):
        np.testing.assert_array_equal(a, b)  # the bfloat16 parameters, bit for bit
    assert_all_close(conv_m, eager_m, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("wrapper", ["LookAhead", "ModelAverage"])
def test_stateful_optimizer_wrappers_run_eagerly(wrapper):
    """LookAhead's slow-weight sync and ModelAverage's sums are Python state that reads
    which parameters hold a gradient mid-step: a converted step with them runs eagerly
    (before, LookAhead's sync ran once at conversion and never again, silently)."""
    def run_w(convert):
        net = make()
        inner = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
        if wrapper == "LookAhead":
            opt = oar.incubate.LookAhead(inner, alpha=0.5, k=2)
        else:
            opt = oar.incubate.ModelAverage(0.15, parameters=net.parameters(), min_average_window=2,
                                            max_average_window=4)

        def step(x, y):
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            if wrapper == "LookAhead":
                opt.step()
                opt.clear_grad()
            else:
                inner.step()
                opt.step()
                inner.clear_grad()
            return loss

        fn = oar.jit.to_static(step) if convert else step
        x, y = batch()
        losses = [float(fn(x, y)) for _ in range(5)]
        if wrapper == "ModelAverage":
            with opt.apply(need_restore=False):
                pass
        return losses, [p.numpy() for p in net.parameters()]

    eager_l, eager_p = run_w(False)
    with pytest.warns(UserWarning, match=f"calls {wrapper}.step"):
        conv_l, conv_p = run_w(True)
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-6)
    assert_all_close(conv_p, eager_p, rtol=1e-6, atol=1e-7)


def test_zero_bytes_check_of_held_gradients():
    """_zero_bytes, which drops an eager clear_grad's zeros before a converted step: True
    only when every byte is 0, None where it cannot read the memory as one block."""
    assert oar.zeros([1000, 3])._zero_bytes() is True
    assert oar.zeros([7], "bfloat16")._zero_bytes() is True
    assert oar.zeros([0])._zero_bytes() is True
    z = np.zeros(1000, "float32")
    z[-1] = 1e-30  # the last element, past the 64-byte blocks
    assert oar.to_tensor(z)._zero_bytes() is False
    assert oar.to_tensor(np.zeros(1003, "float32"))._zero_bytes() is True
    assert oar.to_tensor([0.0, -0.0])._zero_bytes() is False  # -0.0: kept, only slower
    assert oar.zeros([4, 4])[:, :2]._zero_bytes() is None  # a strided view: the op check


@pytest.mark.parametrize("with_spec", [False, True])
def test_saving_a_training_step_is_an_error_naming_it(with_spec, tmp_path):
    """A converted training step updates the parameters: jit.save refuses it with a message
    saying to save the model (before, its program was written and jit.load failed on the
    optimizer's holders)."""
    net = make()
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    step = oar.jit.to_static(train_step(net, opt))
    x, y = batch()
    step(x, y)
    spec = [oar.static.InputSpec([5, 6], "float32"), oar.static.InputSpec([5, 1], "float32")] if with_spec else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the inference conversion's fallback warning
        with pytest.raises(ValueError, match=r"jit.save: train_step.<locals>.step is a training step .*save the model"):
            oar.jit.save(step, str(tmp_path / "m"), input_spec=spec)
    assert not (tmp_path / "m.pdmodel").exists()


@pytest.mark.parametrize("order", ["step_step_clear_clear", "clear_first"])
def test_two_optimizers_after_one_backward(order):
    """Each optimizer's step is its own update op with its own lr and step holders and
    state names (`<name>@optimizer1` for the second): e.g. one optimizer for the first
    layer, another for the rest, at their own learning rates and schedules."""
    def run_two(convert):
        net = make()
        sched = oar.optimizer.lr.StepDecay(0.05, step_size=1, gamma=0.5)
        first = oar.optimizer.Adam(learning_rate=sched, parameters=net[0].parameters())
        rest = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=net[2].parameters())

        def step(x, y):
            if order == "clear_first":
                first.clear_grad()
                rest.clear_grad()
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            first.step()
            rest.step()
            if order != "clear_first":
                first.clear_grad()
                rest.clear_grad()
            sched.step()
            return loss

        fn, losses = strict_calls(step, convert, 4)
        return losses, [p.numpy() for p in net.parameters()], fn, (first, rest)

    eager_l, eager_p, _, eager_opts = run_two(False)
    conv_l, conv_p, fn, opts = run_two(True)
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-6)
    assert_all_close(conv_p, eager_p, rtol=1e-6, atol=1e-7)
    assert [o._step_count for o in opts] == [o._step_count for o in eager_opts] == [4, 4]
    (cp,) = fn.concrete_programs
    text = str(cp.program)
    assert "dist.adam_update" in text and "dist.momentum_update" in text and "lr@optimizer1" in text


def test_a_parameter_two_optimizers_update_runs_eagerly():
    """Two optimizers over the same parameters: the second step reads what the first
    wrote, which two update ops on the traced gradient would not: the step runs eagerly."""
    def setup():
        n = make(1)
        return n, oar.optimizer.SGD(learning_rate=0.1, parameters=n.parameters()), \
            oar.optimizer.SGD(learning_rate=0.05, parameters=n.parameters())

    def body(n, o1, o2, x, y):
        ((n(x) - y) ** 2).mean().backward()
        o1.step()
        o2.step()
        o1.clear_grad()
        return x

    (net, o1, o2), (ref, r1, r2) = setup(), setup()
    x, y = batch()
    conv = oar.jit.to_static(lambda x, y: body(net, o1, o2, x, y))
    with pytest.warns(UserWarning, match=r"calls SGD.step\(\)"):
        for _ in range(2):
            conv(x, y)
    for _ in range(2):
        body(ref, r1, r2, x, y)
    for a, b in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_eager_clear_before_converted_steps_drops_the_zeros_unread():
    """Note [Deferred zeroing of .grad]: `opt.clear_grad()` outside the converted step (the
    step does backward and opt.step) leaves zeros that nothing has written yet; the next
    converted call drops them (held_key: _grad_state 1) without writing or reading them, and
    runs the program that holds no gradients. Parameters equal eager after every call."""
    net, ref = make(1), make(1)
    opt = oar.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
    ref_opt = oar.optimizer.Adam(learning_rate=0.05, parameters=ref.parameters())

    def body(net, opt, x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    conv = oar.jit.to_static(lambda x, y: body(net, opt, x, y))
    x, y = batch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        for _ in range(4):
            np.testing.assert_allclose(float(conv(x, y)), float(body(ref, ref_opt, x, y)), rtol=1e-6)
            opt.clear_grad()
            ref_opt.clear_grad()
            assert all(p._grad_state() == 1 for p in net.parameters())  # zeros pending, unwritten
            for a, b in zip(net.parameters(), ref.parameters()):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    assert all(cp is not None for cp in conv.concrete_programs)
    for p in net.parameters():  # reading .grad writes the pending zeros
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, "float32"))
        assert p._grad_state() == 2
