//! Many calls: the loop, tools, the worker and subtasks.
