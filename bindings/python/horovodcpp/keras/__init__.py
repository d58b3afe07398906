"""horovodcpp.keras: the API of horovod.keras. With Keras 3 on the
TensorFlow backend this is horovodcpp.tensorflow.keras under Horovod's other
name."""
from horovodcpp.tensorflow.keras import *  # noqa: F401,F403
