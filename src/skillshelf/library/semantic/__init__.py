"""Search by meaning (optional): a sentence encoder in NumPy, stored vectors, the model installer."""
