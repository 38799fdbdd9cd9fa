#include "trace/trace-hw_chpp.h"
