"""horovodcpp.keras.callbacks: horovod.keras.callbacks, the Keras callbacks
of horovodcpp.tensorflow.keras under Horovod's other module name."""
from horovodcpp.tensorflow.keras.callbacks import *  # noqa: F401,F403
