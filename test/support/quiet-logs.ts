import { Logger } from '@nestjs/common';

// Tests that check log lines pass their own logger; the rest should not flood the report.
Logger.overrideLogger(false);
