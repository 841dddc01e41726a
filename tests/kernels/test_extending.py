"""docs/extending.md's worked example of an algorithm is fastgt/algorithms/d2.py, word for
word (the module is registered and checked like every algorithm in test_kernels.py); the
algorithms added after GT and D-SGD give the same bits on 1 and 2 threads and in batches
(ATC-GT's two phases: a barrier each on 2 threads)."""

from examples import assert_doc_shows, assert_same_bits_on_threads_and_in_a_batch

from fastgt.algorithms import ALGORITHMS, d2


def test_the_doc_shows_the_module():
    assert_doc_shows("## An algorithm", d2)


def test_same_bits_on_threads_and_in_a_batch():
    for algorithm in ALGORITHMS:  # every one, a new one too
        assert_same_bits_on_threads_and_in_a_batch(
            algorithm=algorithm, problem="hetero_quadratic", noise="gaussian", d=9, steps=17,
            record_every=4, stepsize=0.05, allow_unstable=True)  # d2 on a torus: 17 steps
