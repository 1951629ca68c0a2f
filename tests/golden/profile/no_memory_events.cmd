printf "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"tid\": 1, \"ts\": 1.5, \"dur\": 2}]}" | $OOMDOC profile -
