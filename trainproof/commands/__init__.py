"""One module per command (epoch, compare, watch, data, tokenizer, text): how an input is read, judged and shown."""
