"""check_fit on the seeds' deployments (issue 5, item 4)."""

import pytest

from components.sizing.fit import (
    DEFAULT_OVERHEAD_BYTES_PER_GPU,
    GB10_USABLE_BYTES_PER_GPU,
    RTX_PRO_6000_USABLE_BYTES_PER_GPU,
    Layout,
    ModelDoesNotFitError,
    NodeSpec,
    check_fit,
)
from components.sizing.model_facts import GB, GiB, model_facts_from_config
from fixtures_sizing import (
    QWEN35_122B_A10B_FP8_CONFIG,
    QWEN35_122B_A10B_FP8_WEIGHT_BYTES,
    QWEN35_397B_A17B_NVFP4_CONFIG,
    QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES,
)

NATIVE_CTX = 262_144
OVERHEAD = DEFAULT_OVERHEAD_BYTES_PER_GPU  # 5 GiB = 5.37 GB


def approx_gb(x_gb):
    """Compare byte counts to a GB figure within 0.05 GB."""
    return pytest.approx(x_gb * GB, abs=0.05 * GB)


@pytest.fixture
def q122():
    return model_facts_from_config(QWEN35_122B_A10B_FP8_CONFIG, weight_bytes=QWEN35_122B_A10B_FP8_WEIGHT_BYTES)


@pytest.fixture
def q397():
    return model_facts_from_config(QWEN35_397B_A17B_NVFP4_CONFIG, weight_bytes=QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES)


def one_spark():
    return Layout(tensor_parallel_size=1, nodes=(NodeSpec.dgx_spark("spark-1"),))


def two_sparks():
    return Layout(tensor_parallel_size=2, nodes=(NodeSpec.dgx_spark("spark-1"), NodeSpec.dgx_spark("spark-2")))


def rtx_quad():
    return Layout(tensor_parallel_size=4, nodes=(NodeSpec.rtx_pro_6000("rtxpro"),))


def test_defaults_are_the_documented_hardware():
    assert GB10_USABLE_BYTES_PER_GPU == 120 * GB
    assert RTX_PRO_6000_USABLE_BYTES_PER_GPU == 96 * GB
    assert OVERHEAD == 5 * GiB


# ------------------------------------------------------------------ the seeds' cases


@pytest.mark.parametrize(
    "layout, fraction, fits, weights_gb, kv_gb, needed_gb, budget_gb, n_gpus",
    [
        # 122B FP8 on ONE Spark: 125 GB of weights alone exceed 120 GB x 0.85 = 102 GB.
        pytest.param(one_spark(), 0.85, False, 125.0, 6.44, 136.81, 102.0, 1, id="122b-one-spark"),
        # TP=2 over two Sparks: 62.5 GB + 3.22 GB KV + 5.37 GB overhead = 71.09 GB each.
        pytest.param(two_sparks(), 0.85, True, 62.5, 3.22, 71.09, 102.0, 2, id="122b-two-sparks-tp2"),
        # The public 2-Spark recipe's 0.80 also fits (budget 96 GB).
        pytest.param(two_sparks(), 0.80, True, 62.5, 3.22, 71.09, 96.0, 2, id="122b-two-sparks-tp2-0.80"),
    ],
)
def test_qwen35_122b_fp8_on_sparks(q122, layout, fraction, fits, weights_gb, kv_gb, needed_gb, budget_gb, n_gpus):
    report = check_fit(q122, layout, max_model_len=NATIVE_CTX, memory_fraction=fraction)
    assert report.fits is fits
    assert len(report.gpus) == n_gpus
    for gpu in report.gpus:
        assert gpu.fits is fits
        assert gpu.weight_bytes == approx_gb(weights_gb)
        assert gpu.kv_bytes == approx_gb(kv_gb)
        assert gpu.fixed_state_bytes == 0
        assert gpu.overhead_bytes == OVERHEAD
        assert gpu.needed_bytes == approx_gb(needed_gb)
        assert gpu.budget_bytes == approx_gb(budget_gb)
    assert [g.node for g in report.gpus] == [n.name for n in layout.nodes]


def test_122b_on_one_spark_message_is_actionable(q122):
    report = check_fit(q122, one_spark(), max_model_len=NATIVE_CTX, memory_fraction=0.85)
    msg = report.message
    assert msg.startswith("model does not fit: spark-1/gpu0 needs 136.8 GB")
    assert "weights 125.0 GB" in msg
    assert "budget is 102.0 GB (120.0 GB usable x 0.85); short by 34.8 GB" in msg
    # Ways out, with their numbers.
    assert (
        "raise TP (tensor-parallel size) / add a node: TP=2 over 2 GPUs (1 more node like these) "
        "needs 71.1 GB per GPU of 102.0 GB"
    ) in msg
    assert "shorten max length: no help here" in msg  # weights alone are too big
    assert "fp8 KV cache (kv_cache_dtype: fp8): KV 6.4 GB -> 3.2 GB per GPU" in msg
    assert "still short by 31.6 GB" in msg
    assert "smaller quantization: weights of at most 90.2 GB in total fit this layout (now 125.0 GB)" in msg
    assert "raise the memory fraction: not enough alone, at 0.90 it is still short by 28.8 GB" in msg
    assert report.max_model_len_that_fits is None
    with pytest.raises(ModelDoesNotFitError) as err:
        report.raise_if_unfit()
    assert err.value.report is report


@pytest.mark.parametrize("weight_gb", [224, 234, 250])
def test_qwen35_397b_nvfp4_tp4_on_rtx_quad_fits(q397, weight_gb):
    facts = q397.model_copy(update={"weight_bytes": weight_gb * GB})
    report = check_fit(facts, rtx_quad(), max_model_len=NATIVE_CTX, memory_fraction=0.85)
    assert report.fits, report.message
    assert len(report.gpus) == 4
    gpu = report.gpus[0]
    assert gpu.weight_bytes == approx_gb(weight_gb / 4)
    # 15 full-attention layers x K,V x 1 KV head per rank (2 heads, TP=4 -> replicated) x 256 x 2 B
    assert report.kv_bytes_per_token_per_gpu == 15 * 2 * 1 * 256 * 2 == 15_360
    assert gpu.kv_bytes == 15_360 * NATIVE_CTX  # 4.03 GB
    assert gpu.fixed_state_bytes == 45 * 1_067_008  # 0.05 GB: Gated DeltaNet state, 1 sequence
    assert gpu.budget_bytes == approx_gb(81.6)
    assert gpu.needed_bytes == approx_gb(weight_gb / 4 + 4.03 + 0.05 + 5.37)
    assert report.message.startswith("fits: every GPU needs")


def test_397b_too_long_context_fails_with_shorten_advice(q397):
    # Four concurrent 1,010,000-token (YaRN-extended) sequences: KV 62.1 GB per GPU.
    report = check_fit(q397, rtx_quad(), max_model_len=1_010_000, max_num_seqs=4, memory_fraction=0.85)
    assert not report.fits
    gpu = report.worst
    assert gpu.kv_bytes == 15_360 * 1_010_000 * 4
    assert gpu.kv_bytes == approx_gb(62.05)
    # Room for KV: 81.6 - 58.5 - 0.19 (4 x state) - 5.37 = 17.54 GB -> / (15360 B x 4 seqs)
    expected_len = (int(96 * GB * 0.85) - 58_500_000_000 - 4 * 45 * 1_067_008 - OVERHEAD) // (15_360 * 4)
    assert report.max_model_len_that_fits == expected_len
    assert 285_000 < expected_len < 286_000
    msg = report.message
    assert f"shorten max length: --max-model-len {expected_len} or less fits (now 1010000" in msg
    assert "fp8 KV cache (kv_cache_dtype: fp8): KV 62.1 GB -> 31.0 GB per GPU" in msg
    assert "fewer concurrent sequences: max_num_seqs 1 or less fits (now 4)" in msg
    # KV heads are already 1 per rank, so more TP alone stops helping KV; a second box as a
    # pipeline stage halves the KV layers per GPU.
    assert (
        "raise TP (tensor-parallel size) / add a node: TP=4 x PP=2 over 8 GPUs (4 more GPUs of this size) "
        "needs 67.8 GB per GPU of 81.6 GB"
    ) in msg

    # The advised length really is the boundary.
    at_limit = check_fit(q397, rtx_quad(), max_model_len=expected_len, max_num_seqs=4, memory_fraction=0.85)
    over = check_fit(q397, rtx_quad(), max_model_len=expected_len + 1, max_num_seqs=4, memory_fraction=0.85)
    assert at_limit.fits and not over.fits


def test_fp8_kv_halves_report_kv(q122, q397):
    for facts, layout in ((q122, two_sparks()), (q397, rtx_quad())):
        auto = check_fit(facts, layout, max_model_len=NATIVE_CTX, kv_cache_dtype="auto")
        fp8 = check_fit(facts, layout, max_model_len=NATIVE_CTX, kv_cache_dtype="fp8")
        assert fp8.gpus[0].kv_bytes * 2 == auto.gpus[0].kv_bytes
        assert auto.gpus[0].needed_bytes - fp8.gpus[0].needed_bytes == fp8.gpus[0].kv_bytes
        assert fp8.kv_bytes_per_token_per_gpu * 2 == auto.kv_bytes_per_token_per_gpu


def test_fp8_kv_is_not_advised_when_already_fp8(q122):
    report = check_fit(q122, one_spark(), max_model_len=NATIVE_CTX, kv_cache_dtype="fp8", memory_fraction=0.85)
    assert not report.fits
    assert "fp8 KV cache" not in report.message


def test_memory_fraction_advice_when_it_alone_suffices(q122):
    # 122B TP=2 at a 1M context and fraction 0.60: needs 62.5 + 12.9 + 5.4 = 80.8 GB of 72 GB.
    report = check_fit(q122, two_sparks(), max_model_len=1_048_576, memory_fraction=0.60)
    assert not report.fits
    assert report.gpus[0].needed_bytes == approx_gb(80.75)
    assert "from 0.60 to 0.68" in report.message
    # Never advise beyond 0.9.
    high = check_fit(q122, one_spark(), max_model_len=NATIVE_CTX, memory_fraction=0.92)
    assert "memory fraction" not in high.message


def test_max_num_seqs_multiplies_kv_and_state(q397):
    one = check_fit(q397, rtx_quad(), max_model_len=32_768, max_num_seqs=1)
    eight = check_fit(q397, rtx_quad(), max_model_len=32_768, max_num_seqs=8)
    assert eight.gpus[0].kv_bytes == 8 * one.gpus[0].kv_bytes
    assert eight.gpus[0].fixed_state_bytes == 8 * one.gpus[0].fixed_state_bytes


def test_overhead_is_a_parameter(q122):
    base = check_fit(q122, two_sparks(), max_model_len=NATIVE_CTX)
    more = check_fit(q122, two_sparks(), max_model_len=NATIVE_CTX, overhead_bytes_per_gpu=10 * GiB)
    assert more.gpus[0].needed_bytes - base.gpus[0].needed_bytes == 5 * GiB


def test_heterogeneous_nodes_report_each_gpu(q122):
    # A Spark whose operator keeps 30 GB for other services: usable 90 GB, budget 76.5 GB.
    layout = Layout(
        tensor_parallel_size=2,
        nodes=(NodeSpec.dgx_spark("spark-1"), NodeSpec.dgx_spark("spark-2", usable_bytes_per_gpu=90 * GB)),
    )
    report = check_fit(q122, layout, max_model_len=NATIVE_CTX, memory_fraction=0.85)
    assert report.fits
    assert report.worst.node == "spark-2"
    assert report.worst.budget_bytes == approx_gb(76.5)
    lines = report.summary_lines()
    assert lines[1] == (
        "spark-2/gpu0: weights 62.5 GB + KV 3.2 GB + overhead 5.4 GB = 71.1 GB "
        "of 76.5 GB (90.0 GB x 0.85): fits"
    )


def test_pipeline_parallel_splits_weights_and_kv_layers(q397):
    # TP=2 x PP=2 on the 4-GPU box: 1 KV head per rank, 8 of the 15 KV layers on the fuller stage.
    layout = Layout(tensor_parallel_size=2, pipeline_parallel_size=2, nodes=(NodeSpec.rtx_pro_6000("rtxpro"),))
    report = check_fit(q397, layout, max_model_len=NATIVE_CTX)
    assert report.gpus[0].weight_bytes == approx_gb(58.5)
    assert report.kv_bytes_per_token_per_gpu == 8 * 2 * 1 * 256 * 2


# ------------------------------------------------------------------ layout validation


def test_layout_world_size_must_match_gpus():
    with pytest.raises(ValueError, match="= 2 but the nodes give 1 GPU"):
        Layout(tensor_parallel_size=2, nodes=(NodeSpec.dgx_spark("spark-1"),))
    # Use only half of a 4-GPU box.
    half = Layout(tensor_parallel_size=2, nodes=(NodeSpec.rtx_pro_6000("rtxpro", gpus_used=2),))
    assert half.world_size == 2
    with pytest.raises(ValueError, match="gpus_used 5 > gpu_count 4"):
        NodeSpec.rtx_pro_6000("rtxpro", gpus_used=5)
    with pytest.raises(ValueError, match="node names repeat"):
        Layout(tensor_parallel_size=2, nodes=(NodeSpec.dgx_spark("a"), NodeSpec.dgx_spark("a")))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_model_len": 0}, "max_model_len must be positive"),
        ({"max_model_len": 1024, "max_num_seqs": 0}, "max_num_seqs must be positive"),
        ({"max_model_len": 1024, "memory_fraction": 1.5}, "memory_fraction"),
        ({"max_model_len": 1024, "kv_cache_dtype": "int2"}, "unknown kv cache dtype"),
    ],
)
def test_check_fit_rejects_bad_arguments(q122, kwargs, match):
    with pytest.raises(ValueError, match=match):
        check_fit(q122, two_sparks(), **kwargs)
