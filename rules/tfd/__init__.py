"""TFD: TensorFlow tf.distribute (strategies, their scope, the loss of a custom training loop, the
devices and the cluster a strategy gets)."""
