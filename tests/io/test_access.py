"""The symlink rule of trainproof.io.access: a link inside an input's roots may not lead out of them, nor into .git."""

from __future__ import annotations

import os

import pytest

from trainproof.io.access import ReadPolicy
from trainproof.io.safe import quoted


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n")
    (tmp_path / "ds" / "sub").mkdir(parents=True)
    (tmp_path / "ds" / "ok.txt").write_text("fine")
    (tmp_path / "elsewhere.txt").write_text("beside the dataset")
    os.symlink("../.git/config", tmp_path / "ds" / "token.txt")
    os.symlink("/proc/self/environ", tmp_path / "ds" / "environ.txt")
    os.symlink("ok.txt", tmp_path / "ds" / "same.txt")
    os.symlink("../elsewhere.txt", tmp_path / "ds" / "up.txt")
    os.symlink("/etc", tmp_path / "ds" / "etc")
    return tmp_path


@pytest.mark.parametrize("name", ["token.txt", "environ.txt", "up.txt", "etc/hostname"])
def test_a_link_out_of_the_dataset_folder_is_refused(repo, name):
    refusal = ReadPolicy.for_input("ds", cwd=False).refusal(f"ds/{name}")
    assert refusal is not None
    assert "--follow-links" in refusal


@pytest.mark.parametrize("name", ["ok.txt", "same.txt", "missing.txt"])
def test_a_file_or_a_link_within_the_folder_is_read(repo, name):
    assert ReadPolicy.for_input("ds", cwd=False).refusal(f"ds/{name}") is None


def test_the_working_directory_is_a_root_where_the_layout_resolves_there(repo):
    policy = ReadPolicy.for_input("ds", cwd=True)
    assert policy.refusal("ds/up.txt") is None
    assert "into a .git folder" in policy.refusal("ds/token.txt")  # .git stays out of bounds, even inside a root
    assert policy.refusal("ds/environ.txt") is not None


def test_follow_links_reads_every_link(repo):
    policy = ReadPolicy.for_input("ds", follow_links=True)
    assert all(policy.refusal(f"ds/{name}") is None for name in ("token.txt", "environ.txt", "etc/hostname"))


def test_a_path_outside_every_root_is_read_as_written(repo):
    assert ReadPolicy.for_input("ds", cwd=False).refusal("/etc/hostname") is None


def test_a_named_file_that_is_a_link_is_judged_against_its_own_folder(repo):
    (repo / "data").mkdir()
    os.symlink("../.git/config", repo / "data" / "sample.txt")
    assert ReadPolicy.for_input("data/sample.txt").refusal("data/sample.txt") is not None


def test_quoted_caps_long_text_and_gives_its_length():
    assert quoted("short") == "'short'"
    long = quoted("AWS_SECRET_ACCESS_KEY=" + "k" * 5000, limit=40)
    assert long.endswith("... (5,022 characters)")
    assert "k" * 100 not in long


def test_a_descriptor_the_shell_opened_is_read_but_a_link_to_it_is_judged(repo):
    policy = ReadPolicy.for_input("ds", cwd=False)
    assert policy.refusal("/dev/stdin") is None
    assert policy.refusal("/dev/fd/0") is None
    os.symlink("/dev/stdin", repo / "ds" / "stdin.txt")
    assert policy.refusal("ds/stdin.txt") is not None


def test_the_refusal_names_the_roots_it_read_within(repo):
    assert "outside the input's folder;" in ReadPolicy.for_input("ds", cwd=False).refusal("ds/environ.txt")
    assert "outside the input's folder and the working directory;" in ReadPolicy.for_input("ds").refusal("ds/environ.txt")


def test_a_dangling_link_is_left_to_the_caller_as_a_missing_file(repo):
    os.symlink("../gone.txt", repo / "ds" / "dangling.txt")
    assert ReadPolicy.for_input("ds", cwd=False).refusal("ds/dangling.txt") is None


def test_roots_are_kept_absolute_and_once_and_their_real_folders_derived(repo):
    os.symlink("ds", repo / "alias")
    policy = ReadPolicy(("ds", "./ds/", "alias"))
    assert policy.roots == (os.path.abspath("ds"), os.path.abspath("alias"))
    assert policy.real_roots == (os.path.realpath(repo / "ds"),)


def test_require_raises_the_refusal_as_an_input_error_naming_the_path(repo):
    from trainproof.io.errors import InputError

    policy = ReadPolicy.for_input("ds", cwd=False)
    with pytest.raises(InputError) as raised:
        policy.require("ds/token.txt")
    assert (raised.value.path, raised.value.problem) == ("ds/token.txt", policy.refusal("ds/token.txt"))
    assert policy.require("ds/ok.txt") is None
