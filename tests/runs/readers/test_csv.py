import pytest

from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run
from trainproof.runs.readers.csv import LineParser


def test_lightning_sparse_rows_prefer_the_step_loss(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text(
        "epoch,step,train_loss_epoch,train_loss_step,val_loss\n"
        "0,49,,2.5,\n0,99,,2.3,\n0,99,,,2.4\n0,99,2.4,,\n1,149,,2.1,\n1,199,,2.0,\n1,199,,,2.2\n"
    )
    run = read_run(path)
    assert run.format == "csv"
    assert run.loss_name == "train_loss_step"
    assert run.loss.steps.tolist() == [49, 99, 149, 199]
    assert run.eval_losses["val_loss"].values.tolist() == [2.4, 2.2]
    assert run.step_unit == "step"  # the epoch column is not the axis when there is a step column


def test_keras_log_is_judged_per_epoch(tmp_path):
    path = tmp_path / "training_log.csv"
    path.write_text("epoch,accuracy,learning_rate,loss,val_loss\n0,0.7,0.005,1.9,1.4\n1,0.8,0.005,1.3,1.2\n")
    run = read_run(path)
    assert run.step_unit == "epoch"
    assert run.loss.steps.tolist() == [0, 1]
    assert run.learning_rate.values.tolist() == [0.005, 0.005]


def test_repeated_header_and_tabs(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("step\tloss\n1\t2.0\nstep\tloss\n2\t1.5\n")
    run = read_run(path)
    assert run.loss.values.tolist() == [2.0, 1.5]


def test_no_loss_column(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,test_loss,test_acc,step\n0,0.15,0.95,0\n")
    with pytest.raises(InputError, match="no loss column"):
        read_run(path)


def test_header_only(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n")
    with pytest.raises(InputError, match="no rows"):
        read_run(path)


def test_a_quoted_cell_may_span_lines(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text('step,loss,note\n1,2.0,"warm\nup"\n2,1.5,plain\n3,1.0,"a\n\nb, c"\n4,0.5,\n')
    run = read_run(path)
    assert run.loss.steps.tolist() == [1, 2, 3, 4]
    assert run.loss.values.tolist() == [2.0, 1.5, 1.0, 0.5]
    assert [run.line_of(step) for step in (1, 2, 3, 4)] == [2, 4, 5, 8]  # the line where each row starts


def test_a_row_spanning_lines_waits_for_its_end_when_fed_line_by_line(tmp_path):
    parser = LineParser(tmp_path / "metrics.csv")
    for number, line in enumerate(["step,loss,note", "1,2.0,x", '2,1.5,"still', "being written"], start=1):
        parser.feed(line, number)
    assert parser.build(copy=False).loss.steps.tolist() == [1]  # row 2 is not complete yet
    parser.feed('done"', 5)
    parser.feed("3,1.0,y", 6)
    run = parser.build()
    assert run.loss.steps.tolist() == [1, 2, 3]
    assert run.line_of(2) == 3
    assert run.line_of(3) == 6


def test_a_quote_never_closed_reads_the_rest_as_one_cell(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text('step,loss,note\n1,2.0,x\n2,1.5,"open\n3,1.0,y\n')
    run = read_run(path)
    assert run.loss.steps.tolist() == [1, 2]  # as every CSV reader reads it: row 3 is inside the cell


def test_a_runaway_quoted_cell_is_an_error_naming_the_line_it_starts_on(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text('step,loss,note\n1,2.0,x\n2,1.5,"open\n' + "3,1.0,y\n" * 20_000)
    with pytest.raises(InputError, match=r"is not valid CSV at line 3: field larger than field limit"):
        read_run(path)


def test_crlf_blank_lines_and_a_partial_last_line(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_bytes(b"\r\n \t\r\nstep,loss\r\n1,2.0\r\n\r\n  \r\n2,1.5\r\n3,1.")
    run = read_run(path)
    assert run.loss.steps.tolist() == [1, 2, 3]
    assert run.loss.values.tolist() == [2.0, 1.5, 1.0]
    assert [run.line_of(step) for step in (1, 2, 3)] == [4, 7, 8]


def test_a_broken_row_names_its_line(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n1,2.0\n2,1.5\r3\n")
    with pytest.raises(InputError, match="is not valid CSV at line 3: new-line character seen in unquoted field"):
        read_run(path)


@pytest.mark.parametrize(
    ("header", "named", "columns"),
    [("step,loss,loss", "loss", "2 and 3"), ("step,loss,step", "step", "1 and 3"), ("step,loss,val_acc,val_acc", "val_acc", "3 and 4")],
)
def test_two_columns_of_one_read_name_are_refused_not_one_silently_kept(tmp_path, header, named, columns):
    # csv rows read as mappings kept the last column of a name: ``step,loss,step`` judged the run on a step axis
    # running backwards and FAILed it as diverged; which column is meant cannot be told, so the log is not judged
    path = tmp_path / "metrics.csv"
    width = header.count(",") + 1
    path.write_text(header + "\n" + "".join(f"{s}," + ",".join([f"{3 - s / 10}"] * (width - 1)) + "\n" for s in range(1, 21)))
    with pytest.raises(InputError, match=f"2 columns named '{named}' \\(columns {columns}\\)"):
        read_run(path)


def test_a_repeated_name_no_series_takes_is_left_alone(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,note,note,,\n" + "".join(f"{s},{3 - s / 10},a,b,,\n" for s in range(1, 21)))
    assert read_run(path).loss.values.tolist()[:2] == [2.9, 2.8]


@pytest.mark.parametrize(("text", "hint"), [("step;loss\n1;2.0\n", "semicolons"), ("step|loss\n1|2.0\n", "pipes"), ("loss\n2.0\n", None)])
def test_a_one_column_header_says_which_separator_it_holds(tmp_path, text, hint):
    path = tmp_path / "metrics.csv"
    path.write_text(text)
    with pytest.raises(InputError, match="one-column header") as raised:
        read_run(path, "csv")
    assert (f"separated by {hint}" in str(raised.value)) if hint else ("separated by" not in str(raised.value))
