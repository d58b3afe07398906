// The conversions are inline in half.h so that reduction loops vectorize.
#include "core/half.h"
