//! See `examples/`: `openai_loop` and `anthropic_loop`.
