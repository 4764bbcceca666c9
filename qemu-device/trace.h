#include "trace/trace-hw_misc_accel.h"
