"""horovodcpp.keras.elastic: horovodcpp.tensorflow.keras.elastic under
Horovod's other name."""
from horovodcpp.tensorflow.keras.elastic import (  # noqa: F401
    CommitStateCallback, HostsUpdatedInterrupt, KerasState, ObjectState, State,
    TensorFlowKerasState, UpdateBatchStateCallback, UpdateEpochStateCallback, run)
