"""The Pulumi components a stack is made of, and ServingStack (stack) that wires them."""
