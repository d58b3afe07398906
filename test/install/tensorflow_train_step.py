"""TensorFlow's counterpart of torch_train_step.py: a few
DistributedGradientTape steps, each rank on its own data; the variables end
identical on every rank only if the gradients were averaged."""
import sys

import tensorflow as tf

import horovodcpp.tensorflow as hvd

hvd.init()
tf.random.set_seed(hvd.rank())  # different initial variables: broadcast must fix them
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.05)

data = tf.random.Generator.from_seed(1000 + hvd.rank())
for step in range(5):
    x = data.normal((32, 8))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - tf.reduce_sum(x, axis=1, keepdims=True)) ** 2)
    tape = hvd.DistributedGradientTape(tape)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    if step == 0:  # the optimizer's variables exist from the first step on
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)

flat = tf.concat([tf.reshape(v, [-1]) for v in model.trainable_variables], axis=0)
everyone = hvd.allgather(flat[None]).numpy()
identical = all((row == everyone[0]).all() for row in everyone)
print(f"rank {hvd.rank()}: tensorflow {tf.__version__}, horovodcpp from {hvd.__file__}, "
      f"loss {float(loss):.4f}, parameters "
      f"{'identical' if identical else 'DIFFER'} on all {hvd.size()} ranks", flush=True)
hvd.shutdown()
sys.exit(0 if identical else 1)
