"""Telling parallint's own job spec from other frameworks' YAML that happens to have a ``model``
and a ``parallel`` key (parallint.discover.sniff)."""

from __future__ import annotations

from parallint.discover.classify import classify

GLUE = """\
# Whether to run the GLUE jobs serially or in parallel
parallel: true
base_run_name: hf-bert-base-uncased-glue-finetuning
default_seed: 19
precision: bf16
model:
  name: hf_bert
  pretrained_model_name: bert-base-uncased
"""

SPEC = """\
name: llama-70b-pretrain
notes: a job spec with a key of its own
model:
  preset: llama-2-70b
parallel:
  # the layout
  tp: 8
  pp: 4
hardware: {gpu: H100-80GB, gpus_per_node: 8}
"""


def test_a_parallel_switch_is_not_a_job_spec_section():
    assert classify("yamls/glue/hf-bert-base-uncased.yaml", GLUE) != "jobspec"


def test_a_job_spec_with_sections_is_still_one():
    assert classify("jobs/llama70b.yaml", SPEC) == "jobspec"
    assert classify("jobs/llama70b.yaml", SPEC.replace("hardware: {gpu: H100-80GB, gpus_per_node: 8}\n", "")) == "jobspec"
    flow = SPEC.replace("parallel:\n  # the layout\n  tp: 8\n  pp: 4\n", "parallel: {tp: 8, pp: 4}\n").replace(
        "hardware: {gpu: H100-80GB, gpus_per_node: 8}\n", "")
    assert classify("jobs/llama70b.yaml", flow) == "jobspec"
